"""What a campaign is: its subjects, settings and the work units it expands into.

Pure Python (no Spark), so the units, their ids and their seeds are the same on the driver,
in the benchmarks' plain loop and in a repro command.
"""

from __future__ import annotations

import hashlib
import json
import re
import tomllib
from dataclasses import asdict
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path
from typing import Any

from rstck.fuzz import check_replay
from rstck.rules import RULES
from rstck.rules import VALID_IDS
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

#: TCK settings that mean nothing in a campaign, with why: a unit verifies one subject in a
#: process of its own (a Spark task), so nothing is dealt to workers or shares a schedule.
NOT_CAMPAIGN_SETTINGS = {
    "processes": "a unit runs one subject in a process of its own; Spark's tasks are the campaign's processes",
    "subjects_at_once": "a unit runs one subject, so no subjects share its schedule",
}

#: Seconds a unit's process may go past the engine's own per-test limit before it is killed.
DEFAULT_GRACE_S = 10.0
#: Resident memory (MiB) a unit's process may use before it is killed and its test made an error.
DEFAULT_MEMORY_MB = 1024


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
    seed: int | None = None  # --seed; None: derived from the campaign's content
    rules: list[str] = field(default_factory=list)
    skip_rules: list[str] = field(default_factory=list)
    knobs: dict[str, Any] = field(default_factory=dict)  # Settings field -> parsed value
    grace_s: float = DEFAULT_GRACE_S
    memory_mb: int = DEFAULT_MEMORY_MB
    adapter: str | None = None
    master: str | None = None
    conf: dict[str, str] = field(default_factory=dict)
    ship: bool | None = None  # None: ship when the master is not local
    spark_ui: bool = False

    def settings(self) -> Settings:
        return Settings(**self.knobs, explicit=frozenset(self.knobs))

    def identity(self) -> dict[str, Any]:
        """What the campaign is: what it runs and with which settings, never where or how fast.

        The same command (subjects, rules, repetitions, seeds, settings) is the same campaign,
        so running it again resumes it; the master, Spark settings and shipping are left out.
        """
        return {
            "subjects": [asdict(s) for s in self.subjects],
            "repetitions": self.repetitions, "fuzz_seeds": self.fuzz_seeds, "seeds": self.seeds,
            "seed": self.seed, "rules": self.rules, "skip_rules": self.skip_rules,
            "knobs": self.knobs, "adapter": self.adapter, "grace_s": self.grace_s,
            "memory_mb": self.memory_mb,
        }

    @property
    def campaign_id(self) -> str:
        return "c-" + _digest(json.dumps(self.identity(), sort_keys=True, default=str))[:12]

    @property
    def base_seed(self) -> int:
        """``--seed``, else one drawn from the campaign's content: the same command, the same seeds."""
        if self.seed is not None:
            return self.seed
        return int(_digest("seed|" + json.dumps(self.identity(), sort_keys=True, default=str))[:8], 16)

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["campaign_id"] = self.campaign_id
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Campaign:
        fields_ = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        if "seed" not in data and "base_seed" in data:  # manifests written before identity by content
            fields_["seed"] = data["base_seed"]
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
            "grace_s": self.grace_s, "adapter": self.adapter, "memory_mb": self.memory_mb,
        }


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def rule_list(raw: str | list[str] | None, option: str) -> list[str]:
    """Rule ids from ``1.3,3.9`` or a TOML list, checked against the catalogue."""
    if raw is None or raw == "" or raw == []:
        return []
    ids = [p.strip() for p in (raw.split(",") if isinstance(raw, str) else [str(r) for r in raw])]
    ids = [i for i in ids if i]
    unknown = [i for i in ids if i not in RULES and i not in ("sanity", "fuzz")]
    if unknown:
        raise UsageError(f"{option}: unknown rule id(s) {', '.join(unknown)}; valid ids are "
                         f"{VALID_IDS}, 'sanity' and 'fuzz'")
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
        if knob is not None and knob.name in NOT_CAMPAIGN_SETTINGS:
            raise UsageError(f"{where}: {key!r} is not a campaign setting: {NOT_CAMPAIGN_SETTINGS[knob.name]}")
        if knob is None:
            raise UsageError(f"{where}: unknown setting {key!r}; known: "
                             + ", ".join(sorted(k for k, v in by_key.items()
                                                if ("-" in k or "_" not in k) and v.name not in NOT_CAMPAIGN_SETTINGS)))
        if knob.kind == "bool" and isinstance(value, bool):
            out[knob.name] = value
            continue
        try:
            out[knob.name] = parse_value(knob, str(value), f"{where} {key}")
        except ValueError as exc:
            raise UsageError(str(exc)) from None
    try:
        check_replay(Settings(**out))
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    return out


def positive(value: Any, name: str, *, zero: bool = False) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < (0 if zero else 1):
        kind = "a non-negative" if zero else "a positive"
        raise UsageError(f"{name} must be {kind} integer, got {value!r}")
    return value


def _text(value: Any, name: str) -> str | None:
    if value is None or isinstance(value, str):
        return value
    raise UsageError(f"{name} must be a string, got {value!r}")


def _flag(value: Any, name: str) -> bool | None:
    """A boolean: true/false in a file; a string such as "no" is refused, not taken as true."""
    if value is None or isinstance(value, bool):
        return value
    raise UsageError(f"{name} must be true or false, got {value!r}")


def _seeds(value: Any) -> list[int]:
    if value is None or value == "" or value == []:
        return []
    if isinstance(value, str):
        try:
            return [int(s) for s in value.split(",") if s.strip()]
        except ValueError:
            raise UsageError(f"--seeds must be comma-separated integers, got {value!r}") from None
    if isinstance(value, list) and all(isinstance(s, int) and not isinstance(s, bool) for s in value):
        return list(value)
    raise UsageError(f"seeds must be a list of integers, got {value!r}")


def _number(value: Any, name: str, default: float) -> float:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise UsageError(f"{name} must be a number of seconds, got {value!r}")
    if value <= 0:
        raise UsageError(f"{name} must be > 0, got {value}")
    return float(value)


#: Keys of a campaign file's ``[[publisher]]`` (and other subject) tables.
SUBJECT_KEYS = ("spec", "failed")


def from_toml(path: Path, overrides: dict[str, Any]) -> Campaign:
    """A campaign file: top-level keys as the options, ``[settings]``, ``[[publisher]]`` tables."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise UsageError(f"{path}: cannot read campaign file: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise UsageError(f"{path}: not a valid TOML campaign file: not UTF-8 text") from None
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"{path}: not a valid TOML campaign file: {exc}") from None
    known = {"out", "repetitions", "fuzz_seeds", "seeds", "seed", "rules", "skip_rules", "settings",
             "grace_s", "memory_mb", "adapter", "master", "conf", "ship", "spark_ui", *ROLES}
    unknown = sorted(set(data) - known)
    if unknown:
        raise UsageError(f"{path}: unknown key(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}")
    subjects: list[SubjectSpec] = []
    for role in ROLES:
        entries = data.get(role, [])
        if isinstance(entries, dict | str):
            entries = [entries]
        if not isinstance(entries, list):
            raise UsageError(f"{path}: {role} must be \"module:attr\" or [[{role}]] tables, got {entries!r}")
        for i, entry in enumerate(entries):
            if isinstance(entry, str):
                entry = {"spec": entry}
            if not isinstance(entry, dict) or not isinstance(entry.get("spec"), str):
                raise UsageError(f"{path}: [[{role}]] entry {i + 1} needs spec = \"module:attr\"")
            extra = sorted(set(entry) - set(SUBJECT_KEYS))
            if extra:
                raise UsageError(f"{path}: [[{role}]] entry {i + 1}: unknown key(s) {', '.join(extra)}; "
                                 f"known: {', '.join(SUBJECT_KEYS)}")
            failed = entry.get("failed")
            if failed is not None and role != "publisher":
                raise UsageError(f"{path}: [[{role}]] entry {i + 1}: only a publisher has 'failed'")
            if failed is not None and not isinstance(failed, str):
                raise UsageError(f"{path}: [[{role}]] entry {i + 1}: failed must be \"module:attr\", got {failed!r}")
            subjects.append(SubjectSpec(role, entry["spec"], failed))
    merged = {k: v for k, v in data.items() if k not in ROLES}
    merged.update({k: v for k, v in overrides.items() if v is not None})
    return build(subjects, merged, str(path))


def build(subjects: list[SubjectSpec], values: dict[str, Any], where: str) -> Campaign:
    """A checked campaign from subjects and option values (command line or file).

    Every value is checked for its type here, before anything runs: a campaign file is data
    from anyone, and a wrong type must be a one-line usage error, not a traceback later.
    """
    if not subjects:
        raise UsageError(f"{where}: no subject: give --publisher, --subscriber, "
                         "--whitebox-subscriber or --processor (MODULE:ATTR)")
    for s in subjects:
        for spec in (s.spec, s.failed):
            if spec is not None and (spec.count(":") != 1 or not all(spec.split(":"))):
                raise UsageError(f"--{s.role.replace('_', '-')} must be 'module:attribute', got {spec!r}")
    out = values.get("out")
    if not out:
        raise UsageError(f"{where}: --out DIR is required (where the dataset and report go)")
    if not isinstance(out, str | Path):
        raise UsageError(f"{where}: out must be a directory path, got {out!r}")
    base = values.get("seed")
    if base is not None and (isinstance(base, bool) or not isinstance(base, int)):
        raise UsageError(f"{where}: seed must be an integer, got {base!r}")
    for key in ("rules", "skip_rules"):
        raw = values.get(key)
        if raw is not None and not isinstance(raw, str) and not (
                isinstance(raw, list) and all(isinstance(r, str) for r in raw)):
            raise UsageError(f"{where}: {key} must be a list of rule ids as strings "
                             f"(rules = [\"3.9\"]) or \"3.9,1.3\", got {raw!r}")
    conf = values.get("conf") or {}
    if not isinstance(conf, dict) or not all(isinstance(v, str | int | float | bool) for v in conf.values()):
        raise UsageError(f"{where}: conf must be a table of Spark settings (key = \"value\"), got {conf!r}")
    settings = values.get("settings") or {}
    if not isinstance(settings, dict):
        raise UsageError(f"{where}: settings must be a table ([settings]), got {settings!r}")
    master = _text(values.get("master"), "master")
    if master is not None:
        check_master(master)
    return Campaign(
        subjects=subjects,
        out=str(out),
        repetitions=positive(values.get("repetitions", 1), "--repetitions"),
        fuzz_seeds=positive(values.get("fuzz_seeds", 1), "--fuzz-seeds"),
        seeds=_seeds(values.get("seeds")),
        seed=base,
        rules=rule_list(values.get("rules"), "--rules"),
        skip_rules=rule_list(values.get("skip_rules"), "--skip-rules"),
        knobs=parse_knobs(dict(settings), f"{where} settings"),
        grace_s=_number(values.get("grace_s"), "--grace-s", DEFAULT_GRACE_S),
        memory_mb=positive(values.get("memory_mb", DEFAULT_MEMORY_MB), "--memory-mb", zero=True),
        adapter=_text(values.get("adapter"), "adapter"),
        master=master,
        conf={str(k): (str(v).lower() if isinstance(v, bool) else str(v)) for k, v in conf.items()},
        ship=_flag(values.get("ship"), "ship"),
        spark_ui=bool(_flag(values.get("spark_ui"), "spark_ui")),
    )


_MASTER = re.compile(r"local(\[(\*|[1-9][0-9]*)(,[0-9]+)?\])?|local-cluster\[[0-9]+, *[0-9]+, *[0-9]+\]"
                     r"|spark://[^/\s:]+:[0-9]+(,[^/\s:]+:[0-9]+)*|yarn|k8s://\S+|mesos://\S+")


def check_master(master: str) -> None:
    """A master URL Spark accepts, checked before Spark starts (whose own error is a Java trace)."""
    if not _MASTER.fullmatch(master):
        raise UsageError(f"--master {master!r} is not a Spark master URL: use local, local[N], local[*], "
                         "spark://HOST:PORT, yarn or k8s://...")
