"""manage.py compare_evals --suite S --target NAME=SETTING=VALUE[,...] --target ... [--repeat N] [--json PATH]

Runs one suite against several targets (providers, models, prompt-related settings: see
agents.evals.matrix) in one throwaway database and prints a side-by-side matrix: pass rate
with its 95% interval, the average scores, the judge, tokens, cost and latency. Each target's
run is kept for the evaluations page (unless --no-record).
"""

from __future__ import annotations

import json

from django.core.exceptions import ImproperlyConfigured
from django.core.management.base import BaseCommand, CommandError

from agents.evals.isolation import evaluation_database, flush_evaluation_database
from agents.evals.matrix import parse_target, render, run_matrix
from agents.evals.schema import ScenarioFileError, load_suite, suite_types


class Command(BaseCommand):
    help = "Run one suite against several providers, models or settings and print a side-by-side matrix."

    def add_arguments(self, parser):
        parser.add_argument("--suite", required=True, choices=suite_types())
        parser.add_argument("--target", action="append", required=True, metavar="NAME=SETTING=VALUE[,...]",
                            help="A target to compare; repeat for each (at least two).")
        parser.add_argument("--repeat", type=int, default=1, metavar="N")
        parser.add_argument("--scenario", action="append", metavar="ID", help="Only these scenarios.")
        parser.add_argument("--json", metavar="PATH", help="Write the matrix rows as JSON ('-' for stdout).")
        parser.add_argument("--no-record", action="store_true", help="Do not keep the runs for the evaluations page.")

    def handle(self, *args, **options):
        try:
            targets = [parse_target(t) for t in options["target"]]
        except ImproperlyConfigured as exc:
            raise CommandError(str(exc)) from None
        if len(targets) < 2 or len({t.name for t in targets}) != len(targets):
            raise CommandError("Give at least two --target, each with its own name.")
        if options["repeat"] < 1:
            raise CommandError("--repeat takes a number of 1 or more.")
        try:
            scenarios = load_suite(options["suite"])
        except ScenarioFileError as exc:
            raise CommandError(f"Scenario file refused: {exc}") from None
        if options["scenario"]:
            unknown = set(options["scenario"]) - {s.id for s in scenarios}
            if unknown:
                raise CommandError(f"No scenario {', '.join(sorted(unknown))} in {options['suite']}.")
            scenarios = [s for s in scenarios if s.id in options["scenario"]]
        with evaluation_database():
            reports = run_matrix(options["suite"], targets, reset=flush_evaluation_database, scenarios=scenarios,
                                 repeat=options["repeat"])
        rows = [r["matrix"] for r in reports]
        self.stdout.write(f"{options['suite']}: {len(scenarios)} scenario(s) x {options['repeat']} run(s)")
        self.stdout.write(render(rows))
        if not options["no_record"]:
            from agents.evals.models import eval_run_record

            for report in reports:
                eval_run_record(report=report, started_by=f"manage.py compare_evals ({report['matrix']['target']})")
        if options["json"]:
            text = json.dumps(rows, indent=1)
            if options["json"] == "-":
                self.stdout.write(text)
            else:
                with open(options["json"], "w", encoding="utf-8") as out:
                    out.write(text + "\n")
