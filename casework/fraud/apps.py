from __future__ import annotations

from django.apps import AppConfig


class FraudConfig(AppConfig):
    name = "casework.fraud"
    label = "fraud"
    verbose_name = "Fraud alerts"

    def ready(self) -> None:
        from casework.cases.demo import demo_register
        from casework.cases.types import CASE_TYPES
        from casework.fraud.demo import demo_load_fraud

        CASE_TYPES["fraud_alert"].record_attr = "fraud_alert"
        demo_register("fraud_alert", demo_load_fraud)
