"""manage.py run_evals [--suite S ...] [--save-baseline V] [--compare V] [--fail-on-regression] [--json PATH]

Runs every scenario of the chosen suites (all by default) through the real services,
pipelines and runtime, with the configured provider, in a throwaway database
(agents.evals.isolation): real cases are never touched. Prints a summary per suite (a
progress bar while it runs, on a terminal), compares with a baseline (every metric that
dropped by more than 5% is a warning; --fail-on-regression exits 1), saves a baseline, and
records each suite's run for the evaluations page.
"""

from __future__ import annotations

import json
import sys

from django.core.management.base import BaseCommand, CommandError
from django.db import DatabaseError

from agents.evals.evaluate import SpendCap, run_evaluation
from agents.evals.isolation import evaluation_database, flush_evaluation_database
from agents.evals.report import baseline_load, baseline_save, compare
from agents.evals.schema import ScenarioFileError, load_suite, suite_names, suite_types


class Command(BaseCommand):
    help = "Run the evaluation suites, compare with a baseline, save one."

    def add_arguments(self, parser):
        parser.add_argument("--suite", action="append", choices=suite_types(),
                            help="A suite (case type) to run; repeat for several. Default: every suite.")
        parser.add_argument("--save-baseline", metavar="VERSION", help="Save the results as baseline VERSION.")
        parser.add_argument("--compare", metavar="VERSION", help="Compare with baseline VERSION.")
        parser.add_argument("--fail-on-regression", action="store_true",
                            help="Exit 1 when the comparison finds a regression.")
        parser.add_argument("--json", metavar="PATH", help="Write the full reports as JSON ('-' for stdout).")
        parser.add_argument("--no-record", action="store_true", help="Do not keep the run for the evaluations page.")
        parser.add_argument("--repeat", type=int, default=1, metavar="N",
                            help="Run each scenario N times: pass rate with a 95%% interval, pass@k and pass^k; "
                                 "the regression gate then uses a two-proportion test.")
        parser.add_argument("--scenario", action="append", metavar="ID", help="Only this scenario; repeatable.")
        parser.add_argument("--tag", action="append", metavar="TAG",
                            help="Only scenarios with this tag or category; repeatable (any of them).")
        parser.add_argument("--max-cost", type=float, metavar="USD",
                            help="Stop before the run spends more than this (agents and judge together).")
        parser.add_argument("--workers", type=int, default=1, metavar="W",
                            help="Share the repeats over W processes (each with its own throwaway database; "
                                 "at most the number of cores).")

    def handle(self, *args, **options):
        if options["fail_on_regression"] and not options["compare"]:
            # Without a baseline nothing can regress: the gate would pass whatever happened.
            raise CommandError("--fail-on-regression needs --compare VERSION: the baseline to gate against "
                               "(e.g. --compare offline).")
        if options["repeat"] < 1 or options["workers"] < 1:
            raise CommandError("--repeat and --workers take a number of 1 or more.")
        suites = options["suite"] or suite_names()
        try:
            loaded = {suite: load_suite(suite) for suite in suites}
            for suite in suites:  # and the approved scenarios stored from the web
                loaded[suite] = loaded[suite] + _stored(suite, loaded[suite])
        except ScenarioFileError as exc:
            raise CommandError(f"Scenario file refused: {exc}") from None
        loaded = {suite: _chosen(scenarios, options) for suite, scenarios in loaded.items()}
        if not any(loaded.values()):
            raise CommandError("No scenario matches --scenario / --tag.")
        if options["max_cost"] is not None and options["max_cost"] <= 0:
            raise CommandError("--max-cost takes an amount in USD above 0.")
        if options["max_cost"] is not None and options["workers"] > 1:
            raise CommandError("--max-cost counts spend as it goes: use it with --workers 1.")
        self.cap = SpendCap(options["max_cost"])
        baseline = None
        if options["compare"]:
            try:
                baseline = baseline_load(options["compare"])
            except (FileNotFoundError, ValueError) as exc:
                raise CommandError(str(exc)) from None

        reports: dict[str, dict] = {}
        with evaluation_database():
            for suite in [s for s in suites if loaded[s]]:
                reports[suite] = self._run_suite(suite, loaded[suite], options)

        regressions = 0
        for suite, report in reports.items():
            if baseline is not None:
                before = baseline["suites"].get(suite)
                if before is None:
                    self.stderr.write(self.style.WARNING(f"{suite}: not in baseline {options['compare']!r}."))
                else:
                    if options["scenario"] or options["tag"]:
                        before = _same_scenarios(before, {s["id"] for s in report["scenarios"]})
                    analysis = compare(report, before)
                    report["regression_analysis"] = {"baseline": options["compare"], **analysis}
                    regressions += len(analysis["regressions"])
            self._print_summary(report)
        stopped = [r["summary"]["stopped"] for r in reports.values() if r["summary"].get("stopped")]
        for line in stopped[:1]:
            self.stderr.write(self.style.WARNING(line))
        if options["save_baseline"] and (stopped or options["scenario"] or options["tag"]):
            raise CommandError("A baseline is the whole suite: not saved from a run cut short or filtered.")
        if options["save_baseline"]:
            path = baseline_save(reports, options["save_baseline"])
            self.stdout.write(f"Baseline {options['save_baseline']!r} saved: {path}")
        if not options["no_record"]:
            self._record(reports)
        if options["json"]:
            text = json.dumps(reports, indent=1, ensure_ascii=False, default=str)
            if options["json"] == "-":
                self.stdout.write(text)
            else:
                with open(options["json"], "w", encoding="utf-8") as out:
                    out.write(text + "\n")
        if regressions and options["fail_on_regression"]:
            raise CommandError(f"{regressions} regression(s) against baseline {options['compare']!r}.",
                               returncode=1)

    def _run_suite(self, suite: str, scenarios, options) -> dict:
        more = {"repeat": options["repeat"], "workers": options["workers"], "cap": self.cap}
        if not sys.stderr.isatty():
            return run_evaluation(suite, scenarios=scenarios, reset=flush_evaluation_database, **more)
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        with Progress(TextColumn(f"{suite:<26}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                      TextColumn("{task.description}"), transient=False) as bar:
            task = bar.add_task("", total=len(scenarios))

            def progress(done: int, total: int, scenario_id: str) -> None:
                bar.update(task, completed=done, description=scenario_id)

            return run_evaluation(suite, scenarios=scenarios, reset=flush_evaluation_database, progress=progress,
                                  **more)

    def _print_summary(self, report: dict) -> None:
        summary, config = report["summary"], report["config"]
        scores = ", ".join(f"{k} {v:.2f}" for k, v in summary["avg_scores"].items())
        line = (f"{report['suite']}: {summary['passed']}/{summary['total_scenarios']} passed "
                f"(pass rate {summary['pass_rate']:.2%}); {scores}; judge {summary['judge']}; "
                f"{config['provider']}/{config['model']}, prompts {config['prompt_version']}; {summary['seconds']} s")
        self.stdout.write(self.style.SUCCESS(line) if summary["failed"] == 0 else self.style.WARNING(line))
        attempts = summary.get("attempts") or {}
        if attempts.get("k", 1) > 1:
            low, high = attempts["interval"]
            self.stdout.write(f"  over {attempts['runs']} runs ({attempts['k']} per scenario): pass rate "
                              f"{attempts['rate']:.2f} [{low:.2f}, {high:.2f}] (95% Wilson); "
                              f"pass@{attempts['k']} {attempts['pass_at_k']:.2f}, "
                              f"pass^{attempts['k']} {attempts['pass_hat_k']:.2f}")
        if summary.get("cost_usd") or summary.get("tokens"):
            self.stdout.write(f"  {summary.get('tokens', 0)} tokens, ${summary.get('cost_usd', 0):.4f}")
        for scenario in report["scenarios"]:
            if scenario["status"] != "passed":
                runs = (f" ({scenario['passes']}/{scenario['attempts']} runs passed, 95% "
                        f"[{scenario['interval'][0]:.2f}, {scenario['interval'][1]:.2f}])"
                        if scenario.get("attempts", 1) > 1 else "")
                self.stdout.write(f"  FAILED {scenario['id']}{runs}: " + "; ".join(scenario["failures"][:3]))
        analysis = report["regression_analysis"]
        for item in analysis.get("regressions", []):
            what = item.get("metric") or item.get("scenario")
            self.stderr.write(self.style.WARNING(
                f"  REGRESSION {what}: {item['baseline']} -> {item['current']}"
                + (f" ({item['change_pct']}%)" if "change_pct" in item else "")
                + (f" {_interval(item['baseline_interval'])} -> {_interval(item['current_interval'])}"
                   if "baseline_interval" in item else "")
                + (f" p={item['p_value']:.4f}" if "p_value" in item else "")
                + (f": {item['reason']}" if item.get("reason") else "")))
        for item in analysis.get("improvements", []):
            what = item.get("metric") or item.get("scenario")
            self.stdout.write(f"  improved {what}: {item['baseline']} -> {item['current']}")

    def _record(self, reports: dict) -> None:
        from agents.evals.models import eval_run_record

        try:
            for report in reports.values():
                eval_run_record(report=report, started_by="manage.py run_evals")
        except DatabaseError as exc:
            self.stderr.write(self.style.WARNING(f"Run not recorded for the evaluations page ({exc}); "
                                                 "run manage.py migrate first."))


def _interval(bounds) -> str:
    return f"[{bounds[0]:.2f}, {bounds[1]:.2f}]"


def _chosen(scenarios, options) -> list:
    wanted, tags = set(options.get("scenario") or []), set(options.get("tag") or [])
    return [s for s in scenarios if (not wanted or s.id in wanted)
            and (not tags or tags & ({s.category, *s.tags}))]


def _same_scenarios(baseline: dict, ids: set[str]) -> dict:
    """The baseline cut down to the scenarios a filtered run ran, its summary recomputed."""
    from agents.evals.report import build_report

    return build_report(baseline["suite"], [s for s in baseline["scenarios"] if s["id"] in ids],
                        config=baseline.get("config") or {}, seconds=0)


def _stored(suite: str, files: list) -> list:
    from agents.evals.stored import approved_scenarios

    try:
        stored = approved_scenarios(suite)
    except DatabaseError:  # not migrated yet: nothing stored
        return []
    taken = {s.id for s in files}
    clash = next((s.id for s in stored if s.id in taken), None)
    if clash:
        raise ScenarioFileError(f"{suite}/{clash} (stored)", "id", "is also the id of a file in the suite")
    return stored
