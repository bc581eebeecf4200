"""rs-tck: the kit's one command line.

    rs-tck report rs-tck-results.json -o rs-tck-report.html
    rs-tck rules
    rs-tck replay rs-tck-results.json
    rs-tck replay rsfz1-publisher-... --publisher mylib.streams:range_publisher
    rs-tck campaign --publisher mylib.streams:range_publisher --repetitions 50 --out runs/
    rs-tck ingest ci-results/*.json --out runs/
    rs-tck summary runs/
    rs-tck show runs/ TEST

The verifications themselves run under pytest (pytest --rs-publisher=...). "python -m
rstck_plugins" is the same command; "python -m rstck rules" prints the same rule table.

Exit status: 0 on success; 1 when a verification or a replayed scenario failed (campaign,
replay) or a file was rejected (ingest); 2 on a usage error.
"""

from __future__ import annotations

import argparse
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

PROG = "rs-tck"
#: The subcommands whose arguments live with the Spark campaigns (``campaign/cli.py``).
CAMPAIGN_COMMANDS = ("campaign", "ingest", "summary", "show")
#: A replay token's side, and the verifications whose fuzz test replays it, by subject option.
REPLAY_TESTS = {
    "publisher": {"publisher": "publisher::fuzz_demand_cancel_orders[fuzz]",
                  "processor": "processor::fuzz_demand_cancel_orders[fuzz]"},
    "subscriber": {"subscriber": "subscriber_blackbox::fuzz_signal_orders[fuzz]",
                   "whitebox_subscriber": "subscriber_whitebox::fuzz_signal_orders[fuzz]"},
}


def _parser(prog: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=prog, description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    report = sub.add_parser("report", help="render the HTML report of a results file (pytest --rs-report-json)")
    report.add_argument("results", type=Path, metavar="RESULTS_JSON", help="results file (schema rs-tck-results/1)")
    report.add_argument("-o", "--output", type=Path, metavar="PATH",
                        help="HTML file to write (default: the results file with .html, never over an "
                             "existing file: give -o to replace one)")
    rules = sub.add_parser("rules", help="print the rule table (markdown)")
    rules.add_argument("--update", metavar="README", type=Path,
                       help="rewrite the generated table inside this file instead of printing it")
    rules.add_argument("--edition", metavar="EDITION", default=None,
                       help="the edition whose rules to list: jvm-1.0.1 (default) or rs (its own ids, "
                            "the JVM id beside each)")
    replay = sub.add_parser(
        "replay", help="rerun a fuzz failure's scenario: from a results file, or a token and its subject",
        usage=f"{prog} replay [-h] SOURCE [--publisher MODULE:ATTR ...] [--print] [-- PYTEST_ARGS ...]",
        description="Rerun the shrunk scenario of a fuzz failure, only that test, with pytest. SOURCE is a "
                    "results file (every failed fuzz test in it is replayed, with the run's subjects) or a "
                    "replay token (rsfz1-...), then name its subject. Arguments after -- go to pytest.")
    replay.add_argument("source", metavar="SOURCE", help="results file (--rs-report-json) or replay token")
    for role in ("publisher", "failed_publisher", "subscriber", "whitebox_subscriber", "processor"):
        replay.add_argument(f"--{role.replace('_', '-')}", dest=role, metavar="MODULE:ATTR",
                            help=f"the {role.replace('_', ' ')} subject (with a token)")
    replay.add_argument("--print", dest="print_only", action="store_true",
                        help="print the pytest command(s) instead of running them")
    for name in CAMPAIGN_COMMANDS:
        sub.add_parser(name, add_help=False,
                       help={"campaign": "run verifications many times on Spark and summarise them",
                             "ingest": "add results files of pytest --rs-report-json runs to a dataset",
                             "summary": "recompute summary.json, trend.json and report.html of a dataset",
                             "show": "print one test's failure in a campaign dataset, as pytest prints it",
                             }[name] + f" (see {PROG} {name} --help)")
    return parser


def main(argv: list[str] | None = None, *, prog: str = PROG, spark: Any = None) -> int:
    """Run one subcommand; ``spark``: a session the campaign commands use (and leave running)."""
    given = list(sys.argv[1:] if argv is None else argv)
    if given and given[0] in CAMPAIGN_COMMANDS:
        from .campaign import main as campaign_main

        return campaign_main(given, spark=spark)
    extra: list[str] = []
    if given and given[0] == "replay" and "--" in given:  # the rest is pytest's
        given, extra = given[:given.index("--")], given[given.index("--") + 1:]
    args = _parser(prog).parse_args(given)
    args.pytest_args = extra
    if args.command == "report":
        return report_main(args.results, args.output)
    if args.command == "rules":
        from rstck.editions import NAMES
        from rstck.generated_docs import rules_output

        if args.edition is not None and args.edition not in NAMES:
            return _error(f"--edition {args.edition!r}: expected one of {', '.join(NAMES)}")
        print(rules_output(args.edition, update=args.update))
        return 0
    return replay_main(args)


def _error(text: str) -> int:
    print(f"{PROG}: error: {text}", file=sys.stderr)
    return 2


def report_main(results_path: Path, output: Path | None) -> int:
    """Render the HTML report of a saved results file: after the run, on another machine."""
    from rstck.results import FAILING
    from rstck.results import ResultsFileError
    from rstck.results import load

    from .reports import check_writable
    from .reports import write_html

    try:
        run = load(results_path)
    except ResultsFileError as exc:
        return _error(str(exc))
    if output is None:
        output = results_path.with_suffix(".html")
        if output.exists():
            return _error(f"{output} exists; give -o {output} to replace it, or -o another path")
    problem = check_writable("-o", output)
    if problem:
        return _error(problem)
    try:
        write_html(output, run)
    except OSError as exc:
        return _error(f"{output}: cannot write the report: {exc.strerror or exc}")
    failed = sum(1 for r in run.results if r.outcome in FAILING)
    print(f"{output}: report of {len(run.results)} test(s), {failed} failed")
    return 0


def replay_commands(args: argparse.Namespace) -> list[list[str]]:
    """The pytest argument lists that replay what ``args.source`` names; ValueError if nothing."""
    source = str(args.source)
    if source.startswith("rsfz"):
        from rstck.fuzz import ReplayError
        from rstck.fuzz import decode

        try:
            side, _scenario = decode(source)
        except ReplayError as exc:
            raise ValueError(str(exc)) from None
        tests = REPLAY_TESTS[side]
        roles = [role for role in tests if getattr(args, role)]
        if not roles:
            options = " or ".join(f"--{role.replace('_', '-')}" for role in tests)
            raise ValueError(f"a {side} token: name its subject with {options}")
        words = [f"--rs-{role.replace('_', '-')}={getattr(args, role)}" for role in roles]
        if args.failed_publisher:
            words.append(f"--rs-failed-publisher={args.failed_publisher}")
        return [[*words, *(tests[role] for role in roles), f"--rs-fuzz-replay={source}"]]
    from rstck.results import FAILING
    from rstck.results import ResultsFileError
    from rstck.results import load
    from rstck.verifications import VERIFICATIONS

    path = Path(source)
    if not path.is_file():
        raise ValueError(f"{source}: neither a replay token (rsfz1-...) nor a results file")
    try:
        run = load(path)
    except ResultsFileError as exc:
        raise ValueError(str(exc)) from None
    commands = []
    for result in run.results:
        fuzz = result.fuzz
        if not fuzz or result.outcome not in FAILING:
            continue
        if fuzz.get("replay_command"):
            commands.append(shlex.split(str(fuzz["replay_command"]))[1:])
            continue
        verification = result.verification
        if verification not in VERIFICATIONS:
            continue
        words = [f"{VERIFICATIONS[verification].option}={run.subjects.get(verification, '')}"]
        if run.subjects.get("failed_" + verification):
            words.append(f"--rs-failed-publisher={run.subjects['failed_' + verification]}")
        test = f"{verification}::{result.test}[fuzz]"
        commands.append([*words, test, str(fuzz.get("replay_option"))])
    if not commands:
        raise ValueError(f"{source}: no failed fuzz test in this results file: nothing to replay")
    return commands


def replay_main(args: argparse.Namespace) -> int:
    extra = list(args.pytest_args)
    try:
        commands = replay_commands(args)
    except ValueError as exc:
        return _error(str(exc))
    status = 0
    for words in commands:
        command = ["pytest", *words, *extra]
        print(shlex.join(command), flush=True)
        if not args.print_only:
            status = max(status, subprocess.run([sys.executable, "-m", *command], check=False).returncode)
    return 1 if status == 1 else status


if __name__ == "__main__":
    sys.exit(main())
