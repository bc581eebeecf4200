"""What a campaign is: its subjects, settings and the work units it expands into.

Pure Python (no Spark), so the units, their ids and their seeds are the same on the driver,
in the benchmarks' plain loop and in a repro command.
"""

from __future__ import annotations

import hashlib
import json
import random
import tomllib
from dataclasses import asdict
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path
from typing import Any

from rstck.rules import RULES
from rstck.settings import KNOBS
from rstck.settings import KNOBS_BY_NAME
from rstck.settings import Settings
from rstck.settings import parse_value

#: Subject roles as spelled on the command line and in a campaign file, and their verification.
ROLES = {
    "publisher": "publisher",
    "subscriber": "subscriber_blackbox",
    "whitebox_subscriber": "subscriber_whitebox",
    "processor": "processor",
}

#: Seconds a unit's process may go past the engine's own per-test limit before it is killed.
DEFAULT_GRACE_S = 10.0


class UsageError(ValueError):
    """Bad campaign input; the command prints it on one line and exits with status 2."""


@dataclass(frozen=True)
class SubjectSpec:
    """One subject of a campaign: its role, its ``module:attr`` and, for publishers, the failed one."""

    role: str
    spec: str
    failed: str | None = None

    @property
    def verification(self) -> str:
        return ROLES[self.role]


@dataclass
class Campaign:
    """A campaign definition; its id is a digest of everything that determines its units."""

    subjects: list[SubjectSpec]
    out: str
    repetitions: int = 1
    fuzz_seeds: int = 1
    seeds: list[int] = field(default_factory=list)  # explicit seeds (repro); overrides fuzz_seeds
    base_seed: int = 0
    rules: list[str] = field(default_factory=list)
    skip_rules: list[str] = field(default_factory=list)
    knobs: dict[str, Any] = field(default_factory=dict)  # Settings field -> parsed value
    grace_s: float = DEFAULT_GRACE_S
    adapter: str | None = None
    master: str | None = None
    conf: dict[str, str] = field(default_factory=dict)
    ship: bool | None = None  # None: ship when the master is not local
    spark_ui: bool = False

    def settings(self) -> Settings:
        return Settings(**self.knobs, explicit=frozenset(self.knobs))

    @property
    def campaign_id(self) -> str:
        key = {
            "subjects": [asdict(s) for s in self.subjects],
            "repetitions": self.repetitions, "fuzz_seeds": self.fuzz_seeds, "seeds": self.seeds,
            "base_seed": self.base_seed, "rules": self.rules, "skip_rules": self.skip_rules,
            "knobs": self.knobs, "adapter": self.adapter,
        }
        return "c-" + _digest(json.dumps(key, sort_keys=True))[:12]

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["campaign_id"] = self.campaign_id
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Campaign:
        fields_ = {k: v for k, v in data.items() if k != "campaign_id"}
        fields_["subjects"] = [SubjectSpec(**s) for s in data["subjects"]]
        return cls(**fields_)

    def unit_seeds(self, subject: SubjectSpec, repetition: int) -> list[int]:
        """The seeds of one repetition: explicit ones, else ``fuzz_seeds`` derived ones."""
        if self.seeds:
            return list(self.seeds)
        return [
            int(_digest(f"{self.base_seed}|{subject.spec}|{subject.verification}|{repetition}|{k}")[:8], 16)
            for k in range(self.fuzz_seeds)
        ]

    def units(self) -> list[dict[str, Any]]:
        """Every work unit: subject x verification x repetition x seed, with a stable id."""
        out: list[dict[str, Any]] = []
        cid = self.campaign_id
        for subject in self.subjects:
            for repetition in range(self.repetitions):
                for seed in self.unit_seeds(subject, repetition):
                    uid = _digest(f"{cid}|{subject.role}|{subject.spec}|{subject.failed}|{repetition}|{seed}")
                    out.append({
                        "unit_id": "u-" + uid[:16], "campaign_id": cid, "slot": len(out),
                        "role": subject.role, "verification": subject.verification,
                        "subject": subject.spec, "failed": subject.failed,
                        "repetition": repetition, "seed": seed,
                    })
        return out

    def task(self) -> dict[str, Any]:
        """What every unit of this campaign shares, as sent to the executors."""
        return {
            "knobs": self.knobs, "rules": self.rules, "skip_rules": self.skip_rules,
            "grace_s": self.grace_s, "adapter": self.adapter,
        }


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def rule_list(raw: str | list[str] | None, option: str) -> list[str]:
    """Rule ids from ``1.3,3.9`` or a TOML list, checked against the catalogue."""
    if raw is None or raw == "" or raw == []:
        return []
    ids = [p.strip() for p in (raw.split(",") if isinstance(raw, str) else [str(r) for r in raw])]
    ids = [i for i in ids if i]
    unknown = [i for i in ids if i not in RULES and i != "sanity"]
    if unknown:
        raise UsageError(f"{option}: unknown rule id(s) {', '.join(unknown)}; valid ids are "
                         "1.1-1.11, 2.1-2.13, 3.1-3.17, 4.1-4.2 and 'sanity'")
    return ids


def knob_option(name: str) -> str:
    """The campaign option of a TCK setting: ``--rs-timeout-ms`` becomes ``--timeout-ms``."""
    return "--" + KNOBS_BY_NAME[name].option.removeprefix("--rs-")


def parse_knobs(raw: dict[str, Any], where: str) -> dict[str, Any]:
    """TCK settings by ``Settings`` field, from option-named raw values (``timeout-ms``)."""
    by_key = {knob_option(k.name).lstrip("-"): k for k in KNOBS}
    by_key.update({k.replace("-", "_"): v for k, v in list(by_key.items())})
    out: dict[str, Any] = {}
    for key, value in raw.items():
        knob = by_key.get(key)
        if knob is None:
            raise UsageError(f"{where}: unknown setting {key!r}; known: "
                             + ", ".join(sorted(k for k in by_key if "-" in k or "_" not in k)))
        if knob.kind == "bool" and isinstance(value, bool):
            out[knob.name] = value
            continue
        try:
            out[knob.name] = parse_value(knob, str(value), f"{where} {key}")
        except ValueError as exc:
            raise UsageError(str(exc)) from None
    try:
        Settings(**out)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    return out


def positive(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise UsageError(f"{name} must be a positive integer, got {value!r}")
    return value


def new_base_seed() -> int:
    return random.SystemRandom().randrange(2**32)


def from_toml(path: Path, overrides: dict[str, Any]) -> Campaign:
    """A campaign file: top-level keys as the options, ``[settings]``, ``[[publisher]]`` tables."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise UsageError(f"{path}: cannot read campaign file: {exc.strerror or exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"{path}: not a valid TOML campaign file: {exc}") from None
    known = {"out", "repetitions", "fuzz_seeds", "seeds", "seed", "rules", "skip_rules", "settings",
             "grace_s", "adapter", "master", "conf", "ship", "spark_ui", *ROLES}
    unknown = sorted(set(data) - known)
    if unknown:
        raise UsageError(f"{path}: unknown key(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}")
    subjects: list[SubjectSpec] = []
    for role in ROLES:
        entries = data.get(role, [])
        if isinstance(entries, dict | str):
            entries = [entries]
        for i, entry in enumerate(entries):
            if isinstance(entry, str):
                entry = {"spec": entry}
            if not isinstance(entry, dict) or not isinstance(entry.get("spec"), str):
                raise UsageError(f"{path}: [[{role}]] entry {i + 1} needs spec = \"module:attr\"")
            failed = entry.get("failed")
            if failed is not None and role != "publisher":
                raise UsageError(f"{path}: [[{role}]] entry {i + 1}: only a publisher has 'failed'")
            subjects.append(SubjectSpec(role, entry["spec"], failed))
    merged = {k: v for k, v in data.items() if k not in ROLES}
    merged.update({k: v for k, v in overrides.items() if v is not None})
    return build(subjects, merged, str(path))


def build(subjects: list[SubjectSpec], values: dict[str, Any], where: str) -> Campaign:
    """A checked campaign from subjects and option values (command line or file)."""
    if not subjects:
        raise UsageError(f"{where}: no subject: give --publisher, --subscriber, "
                         "--whitebox-subscriber or --processor (MODULE:ATTR)")
    for s in subjects:
        if s.spec.count(":") != 1 or not all(s.spec.split(":")):
            raise UsageError(f"--{s.role.replace('_', '-')} must be 'module:attribute', got {s.spec!r}")
    out = values.get("out")
    if not out:
        raise UsageError(f"{where}: --out DIR is required (where the dataset and report go)")
    seeds = values.get("seeds") or []
    if isinstance(seeds, str):
        try:
            seeds = [int(s) for s in seeds.split(",") if s.strip()]
        except ValueError:
            raise UsageError(f"--seeds must be comma-separated integers, got {values['seeds']!r}") from None
    base = values.get("seed")
    grace = float(values.get("grace_s") or DEFAULT_GRACE_S)
    if grace <= 0:
        raise UsageError(f"--grace-s must be > 0, got {grace}")
    conf = values.get("conf") or {}
    if not isinstance(conf, dict):
        raise UsageError("conf must be a table of Spark settings")
    return Campaign(
        subjects=subjects,
        out=str(out),
        repetitions=positive(values.get("repetitions", 1), "--repetitions"),
        fuzz_seeds=positive(values.get("fuzz_seeds", 1), "--fuzz-seeds"),
        seeds=[int(s) for s in seeds],
        base_seed=int(base) if base is not None else new_base_seed(),
        rules=rule_list(values.get("rules"), "--rules"),
        skip_rules=rule_list(values.get("skip_rules"), "--skip-rules"),
        knobs=parse_knobs(dict(values.get("settings") or {}), f"{where} settings"),
        grace_s=grace,
        adapter=values.get("adapter"),
        master=values.get("master"),
        conf={str(k): str(v) for k, v in conf.items()},
        ship=values.get("ship"),
        spark_ui=bool(values.get("spark_ui", False)),
    )
