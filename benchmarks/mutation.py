"""Mutation run of the kit: every first-order mutant of ``rstck/reference/``, through the kit.

A mutant is killed when a required (or stochastic, or fuzz) test fails or errors on one of the
subjects built from its module (``tests/mutation.py``). Every mutant runs first with
fuzzing off (cheap: most die there); the survivors then run in the default mode, fuzzing on.
Both verdicts are written to ``benchmarks/mutation-results.json``, which the survivors section
of ``docs/mutation-table.md`` is generated from (with the hand classification of each survivor
in ``benchmarks/mutation-classes.json``: equivalent, and why, or a miss).

    python benchmarks/mutation.py                       # the whole run, 2 processes
    python benchmarks/mutation.py --files publishers.py --limit 20 --out /tmp/m.json
    python benchmarks/mutation.py --resume              # only what the results file lacks
    python benchmarks/mutation.py --resume --rerun-survivors --with-fuzz   # survivors, on a sharper kit
    python benchmarks/mutation.py --resume --files publishers.py --mutants ID...   # confirm kills
    python -m tests.mutation_table --update docs/mutation-table.md

The unmutated modules run first, in both modes, as a control: a kit that fails its own
reference would kill every mutant and prove nothing, so the run stops there.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rstck.results import TCK_VERSION

from tests import mutation

RESULTS = ROOT / "benchmarks" / "mutation-results.json"


def _preload() -> None:
    """Import here what every mutant's process needs, so each fork starts warm."""
    import rstck._internal.fuzz.search
    import rstck._internal.fuzz.verify
    import rstck.run_api  # noqa: F401


def _save(path: Path, data: dict[str, Any]) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--files", nargs="*", default=list(mutation.REFERENCE_FILES), choices=mutation.REFERENCE_FILES)
    parser.add_argument("--parallel", type=int, default=2, help="mutants at once (default 2)")
    parser.add_argument("--deadline", type=float, default=180.0, help="seconds one mutant may take (default 180)")
    parser.add_argument("--limit", type=int, help="only the first N mutants of each file")
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--resume", action="store_true", help="keep the verdicts already in --out")
    parser.add_argument("--rerun-survivors", nargs="*", default=None, metavar="FILE",
                        help="with --resume: run these files' (no FILE: every file's) survivors again with fuzzing off (after the "
                        "kit gained fixed tests; the fuzz verdicts are kept for those that survive again)")
    parser.add_argument("--with-fuzz", action="store_true",
                        help="with --rerun-survivors: run those that survive again in the default mode too "
                        "(after the fuzz verification changed)")
    parser.add_argument("--mutants", nargs="+", default=[], metavar="ID",
                        help="with --resume: run these mutants again, in both modes (to confirm kills "
                        "after the kit was sharpened)")
    args = parser.parse_args(argv)

    if args.rerun_survivors == []:
        args.rerun_survivors = list(args.files)
    _preload()
    sources = {f: mutation.reference_source(f) for f in args.files}
    old: dict[str, Any] = {}
    if args.resume and args.out.exists():
        old = {m["id"]: m for m in json.loads(args.out.read_text(encoding="utf-8"))["mutants"]}
    if args.rerun_survivors:
        for record in old.values():
            if record["file"] in args.rerun_survivors and mutation.final_status(record) == "survived":
                record["fuzz_off"] = None
                if args.with_fuzz:
                    record["fuzz_on"] = None
    unknown = sorted(set(args.mutants) - set(old))
    if unknown:
        parser.error(f"--mutants: not in {args.out} (run it with --resume first): {', '.join(unknown)}")
    for mutant_id in args.mutants:
        old[mutant_id]["fuzz_off"] = old[mutant_id]["fuzz_on"] = None
    records: dict[str, dict[str, Any]] = {}
    for file in args.files:
        found = mutation.mutants(sources[file], file)
        for m in found[: args.limit]:
            records[m.id] = old.get(m.id) or {
                "id": m.id, "file": file, "index": m.index, "line": m.line, "operator": m.operator,
                "original": m.original, "replacement": m.replacement, "fuzz_off": None, "fuzz_on": None}
        print(f"{file}: {len(found)} mutants", file=sys.stderr)
    mutants = {r["id"]: mutation.Mutant(r["file"], r["index"], r["line"], int(r["id"].split(":")[2]),
                                        r["operator"], r["original"], r["replacement"]) for r in records.values()}
    previous = json.loads(args.out.read_text(encoding="utf-8"))["run"] if old else {}
    # A narrower --files keeps the other files' verdicts: the results stay one whole run.
    others = [r for r in old.values() if r["file"] not in args.files]
    files = [f for f in mutation.REFERENCE_FILES if f in args.files or f in previous.get("files", [])]
    data: dict[str, Any] = {
        "run": {**previous, "python": platform.python_version(), "tck_version": TCK_VERSION,
                "cpus": os.cpu_count(), "parallel": args.parallel, "deadline_s": args.deadline,
                "files": files},
        "controls": {}, "mutants": list(records.values()) + others}
    started = time.monotonic()

    def control(job: mutation.Job, outcome: mutation.Outcome) -> None:
        data["controls"][f"{job.file}:{'fuzz_on' if job.fuzz else 'fuzz_off'}"] = mutation.outcome_json(outcome)

    mutation.run([mutation.Job(f, sources[f], None, fuzz) for f in args.files for fuzz in (False, True)],
                 parallel=args.parallel, deadline=args.deadline, on_done=control)
    bad = {k: v for k, v in data["controls"].items() if v["status"] != "survived"}
    if bad:
        print(f"the unmutated reference fails the kit, no mutant can be judged: {bad}", file=sys.stderr)
        return 1

    done = 0

    def record(mode: str) -> Any:
        def on_done(job: mutation.Job, outcome: mutation.Outcome) -> None:
            nonlocal done
            assert job.mutant is not None
            records[job.mutant.id][mode] = mutation.outcome_json(outcome)
            if mode == "fuzz_off" and outcome.killed:
                records[job.mutant.id]["fuzz_on"] = None  # a verdict of the kit before it was sharpened
            done += 1
            if done % 20 == 0:
                _save(args.out, data)
                print(f"{mode}: {done} done, {time.monotonic() - started:.0f} s", file=sys.stderr)
        return on_done

    for mode, fuzz in (("fuzz_off", False), ("fuzz_on", True)):
        todo = [mutation.Job(r["file"], sources[r["file"]], mutants[i], fuzz) for i, r in records.items()
                if r[mode] is None and (not fuzz or (r["fuzz_off"] or {}).get("status") == "survived")]
        phase = time.monotonic()
        mutation.run(todo, parallel=args.parallel, deadline=args.deadline, on_done=record(mode))
        key = "confirm_" if args.mutants else "rerun_" if args.rerun_survivors else ""
        data["run"][f"{key}{mode}_s"] = round(time.monotonic() - phase, 1)
        data["run"][f"{key}{mode}_mutants"] = len(todo)
        _save(args.out, data)
    data["run"][f"{key}seconds"] = round(time.monotonic() - started, 1)
    _save(args.out, data)
    for file in args.files:
        mine = [r for r in records.values() if r["file"] == file]
        alive = [r for r in mine if (r["fuzz_on"] or r["fuzz_off"] or {}).get("status") == "survived"]
        print(f"{file}: {len(mine)} mutants, {len(mine) - len(alive)} killed, {len(alive)} survived")
    print(f"{data['run']['seconds']} s in all; written to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
