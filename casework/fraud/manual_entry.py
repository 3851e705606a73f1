"""One alert typed by a person on the import page, and the CSV template for a file.

A typed alert goes through exactly what one row of an imported file goes through: each value
is read as the CSV reader reads a cell (blank means absent; risk factors, device ids and IP
addresses are lists separated by "|"), validated by the same AlertIn, and created by the same
service, which opens the case and queues its investigation. Errors are keyed by field name.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping

from django import forms

from casework.fraud.csv_import import _cell
from casework.fraud.features import ALL_FIELDS, FEATURES_BY_NAME, LINK_NAMES, REQUIRED_FIELDS, SCORE_NAMES
from casework.fraud.models import Alert
from casework.fraud.services import alert_create

# The template's example row: an ordinary customer, so that it imports cleanly as it is.
TEMPLATE_EXAMPLE = {
    "account_id": "ACC-EXAMPLE-1", "declared_income_annual": "42000", "deposits_total": "12500",
    "deposits_count": "14", "withdrawals_total": "9800", "withdrawals_count": "21",
    "deposit_withdraw_cycle_days_avg": "18.5", "deposits_vs_income_ratio": "0.3", "kyc_face_match_score": "0.93",
    "account_age_days": "740", "vpn_usage_pct": "2", "countries_accessed_count": "1", "device_shared_count": "0",
    "ip_shared_count": "1",
}
TEMPLATE_COLUMNS = REQUIRED_FIELDS  # the optional columns are named on the page; a file may add them
_HELP = {
    "account_id": "The account's identifier in the core banking system.",
    "fraud_probability": "Upstream model's fraud probability, 0 to 1.",
    "anomaly_score": "Upstream model's anomaly score, 0 to 1.",
    "risk_level": "low, medium, high or critical.",
    "one_line_explanation": "Upstream model's one-line explanation.",
    "risk_factors": "Sentences separated by |",
    "device_ids": "Identifiers separated by |",
    "ip_addresses": "Addresses separated by |",
}


def alert_csv_template() -> str:
    """A header line with every required column, and one example row that imports as it is."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(TEMPLATE_COLUMNS)
    writer.writerow([TEMPLATE_EXAMPLE[name] for name in TEMPLATE_COLUMNS])
    return out.getvalue()


def alert_enter(*, actor, values: Mapping[str, str]) -> Alert:
    """Validate and create one alert from typed values, as an import would from a CSV row.
    Raises django ValidationError keyed by field name (the same messages an import shows)."""
    row = {name: value for name, value in ((name, _cell(name, values.get(name))) for name in ALL_FIELDS)
           if value is not None}
    return alert_create(actor=actor, data=row, via="manual_entry")


def _label(name: str) -> str:
    words = name.replace("_", " ").capitalize().split()
    return " ".join({"Kyc": "KYC", "Vpn": "VPN", "Ip": "IP", "ip": "IP", "Id": "ID", "id": "ID"}.get(w, w) for w in words)


class ManualAlertForm(forms.Form):
    """Text inputs only: the values are checked by the import's validation, not by the form,
    so a person sees the messages an import would give, each beside its field."""

    REQUIRED = REQUIRED_FIELDS
    OPTIONAL = (*SCORE_NAMES, *LINK_NAMES)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        for name in ALL_FIELDS:
            feature = FEATURES_BY_NAME.get(name)
            attrs = {"autocomplete": "off"}
            if feature is not None:
                attrs["inputmode"] = "numeric" if feature.integer else "decimal"
            self.fields[name] = forms.CharField(
                required=False, max_length=4000, label=_label(name), strip=False,
                help_text=feature.description if feature else _HELP.get(name, ""),
                widget=forms.TextInput(attrs=attrs))

    def required_fields(self):
        return [self[name] for name in self.REQUIRED]

    def optional_fields(self):
        return [self[name] for name in self.OPTIONAL]

    def optional_open(self) -> bool:
        """Open the optional fields when one of them was filled in or refused."""
        return self.is_bound and any(self.data.get(n) or self.errors.get(n) for n in self.OPTIONAL)

    def values(self) -> dict[str, str]:
        return {name: self.cleaned_data.get(name, "") for name in ALL_FIELDS}

