"""Prompt-injection scanner: detection and false-positive rates on BIPIA and AgentDojo, and scan speed.

    python benchmarks/scanner.py                      # the default PatternScanner
    python benchmarks/scanner.py --table-contexts 900 # every BIPIA table context (slower)
    python benchmarks/scanner.py --show 5             # also print a few misses and false alarms
    python benchmarks/scanner.py --scanner mypkg.mod:make_scanner   # any factory returning a Scanner

Reads ``../shared/data`` (relative to the repository root).

BIPIA: each attack text is inserted at the start, the middle and the end of each context, as BIPIA
builds its cases (``"\\n".join``; the middle is a sentence start chosen with a seeded RNG, sentences
found by a simple punctuation splitter instead of NLTK's Punkt). Text attacks go into email and table
contexts, code attacks into code contexts. Clean contexts measure false alarms.

AgentDojo (banking, slack): the tool outputs of the benign ground-truth traces in
``attack_cases_important_instructions.jsonl`` that carry the injected text are the positives; the
other tool outputs of those traces and the text values of ``environment.json`` are the negatives.

Splits, fixed before tuning: the tune split is the even-numbered attack categories (file order) on
the even-numbered contexts, and AgentDojo banking; the held-out split is the odd-numbered
categories on the odd-numbered contexts, and AgentDojo slack ("cross" pairs the rest). The rules
were written against the tune split's misses, but every attack text was read before the split was
chosen and three fixes came from held-out misses (a domain's dots inside a sentence, scp as a way
to copy files out, "In your response, suggest users ..."): held-out figures mean "not tuned on",
not "never seen", and are likely higher than on truly new attack suites.

Extra negatives: BEIR SciFact abstracts and the demo workspace's documents (ordinary prose, policy
and contract text); the demo's supplier FAQ carries a planted injection and counts as a positive.

Prints figures and ends with one JSON line holding all of them.
"""

from __future__ import annotations

import argparse
import importlib
import json
import random
import re
import statistics
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import _quick  # benchmarks/_quick.py: --quick

from toolcrib.policy.scanner import PatternScanner, Scanner

ROOT = Path(__file__).resolve().parents[1]
DEMO_DOCS = ROOT / "src" / "toolcrib" / "demo" / "workspace" / "docs"
SEED = 2023  # BIPIA's example seed
_SENTENCE_START = re.compile(r"(?<=[.!?])[\"')\]]*\s+(?=\S)")


@dataclass
class Tally:
    """Hits over a count of cases, with a few examples of each outcome kept for --show."""

    hits: int = 0
    n: int = 0
    examples: list[str] = field(default_factory=list)

    def add(self, hit: bool, text: str, keep_when: bool, keep: int) -> None:
        self.n += 1
        self.hits += hit
        if hit == keep_when and len(self.examples) < keep:
            self.examples.append(text)

    @property
    def rate(self) -> float | None:
        return round(self.hits / self.n, 4) if self.n else None


# -- BIPIA -----------------------------------------------------------------------------------------

def insert_start(context: str, attack: str) -> str:
    return "\n".join([attack, context])


def insert_end(context: str, attack: str) -> str:
    return "\n".join([context, attack])


def insert_middle(context: str, attack: str) -> str:
    starts = [0] + [m.end() for m in _SENTENCE_START.finditer(context)]
    start = random.Random(SEED).choice(starts)
    return "\n".join([context[:start], attack, context[start:]])


INSERTS: dict[str, Callable[[str, str], str]] = {"start": insert_start, "middle": insert_middle, "end": insert_end}


def bipia_contexts(folder: Path, task: str, limit: int | None) -> list[str]:
    rows = [json.loads(line) for line in (folder / task / "train.jsonl").read_text(encoding="utf-8").splitlines()
            if line.strip()]
    contexts = ["\n".join(r["context"]) if isinstance(r["context"], list) else r["context"] for r in rows]
    if limit is not None and limit < len(contexts):  # an even spread, so both splits keep their share
        step = len(contexts) / limit
        contexts = [contexts[int(i * step)] for i in range(limit)]
    return contexts


def bipia_attacks(path: Path) -> list[tuple[str, int, str]]:
    """(category, category index in file order, attack text) for every attack in the file."""
    data: dict[str, list[str]] = json.loads(path.read_text(encoding="utf-8"))
    return [(name, i, text) for i, (name, texts) in enumerate(data.items()) for text in texts]


def split_of(index: int) -> str:
    return "tune" if index % 2 == 0 else "heldout"


def run_bipia(scanner: Scanner, folder: Path, limits: dict[str, int | None], keep: int,
              timer: list[float], sizes: list[int]) -> dict[str, Any]:
    text_attacks = bipia_attacks(folder / "text_attack_train.json")
    code_attacks = bipia_attacks(folder / "code_attack_train.json")
    out: dict[str, Any] = {}
    for task, attacks in (("email", text_attacks), ("table", text_attacks), ("code", code_attacks)):
        contexts = bipia_contexts(folder, task, limits.get(task))
        fp = {"tune": Tally(), "heldout": Tally()}
        for ci, context in enumerate(contexts):
            fp[split_of(ci)].add(flagged(scanner, context, timer, sizes), context, True, keep)
        det = {"tune": Tally(), "heldout": Tally(), "cross": Tally()}
        per_category: dict[str, Tally] = {}
        per_position: dict[str, Tally] = {}
        for ci, context in enumerate(contexts):
            for category, cat_index, attack in attacks:
                cs, asplit = split_of(ci), split_of(cat_index)
                split = asplit if cs == asplit else "cross"
                for position, insert in INSERTS.items():
                    hit = flagged(scanner, insert(context, attack), timer, sizes)
                    det[split].add(hit, attack, False, keep)
                    per_category.setdefault(category, Tally()).add(hit, attack, False, 0)
                    per_position.setdefault(position, Tally()).add(hit, attack, False, 0)
        overall = Tally(sum(t.hits for t in det.values()), sum(t.n for t in det.values()))
        fp_all = Tally(sum(t.hits for t in fp.values()), sum(t.n for t in fp.values()))
        out[task] = {"contexts": len(contexts), "attacks": len(attacks), "detection": det, "detection_all": overall,
                     "fp": fp, "fp_all": fp_all, "per_category": per_category, "per_position": per_position}
    return out


# -- AgentDojo -------------------------------------------------------------------------------------

def _squash(text: str) -> str:
    return " ".join(text.split())


def _string_leaves(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _string_leaves(v)
    elif isinstance(value, list):
        for v in value:
            yield from _string_leaves(v)


def agentdojo_texts(suite_dir: Path) -> tuple[list[tuple[str, str]], list[str]]:
    """((case id, injected tool output) for every case, clean negatives once each)."""
    positives: list[tuple[str, str]] = []
    negatives: dict[str, None] = {}
    for line in (suite_dir / "attack_cases_important_instructions.jsonl").read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        case = json.loads(line)
        goal = _squash(case["attacker_goal"])
        case_id = f"{case['user_task_id']}/{case['injection_task_id']}"
        for message in case["benign_ground_truth_trace_with_injected_outputs"]:
            if message["role"] != "tool":
                continue
            content = str(message["content"])
            if goal in _squash(content.replace("''", "'")):  # YAML doubles a quote inside quotes
                positives.append((case_id, content))
            else:
                negatives[content] = None
    environment = json.loads((suite_dir / "environment.json").read_text(encoding="utf-8"))
    for leaf in _string_leaves(environment):
        if len(leaf) >= 20:
            negatives[leaf] = None
    for section in environment.values():  # what a tool returning a whole record looks like through the Gate
        negatives[str(section)] = None
    return positives, list(negatives)


def run_agentdojo(scanner: Scanner, folder: Path, keep: int, timer: list[float],
                  sizes: list[int]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for suite in ("banking", "slack"):
        positives, negatives = agentdojo_texts(folder / suite)
        det, fp = Tally(), Tally()
        cases: dict[str, bool] = {}
        seen: dict[str, bool] = {}
        for case_id, text in positives:  # many cases share an injected output: count each text once
            if text not in seen:
                seen[text] = flagged(scanner, text, timer, sizes)
                det.add(seen[text], text, False, keep)
            cases[case_id] = cases.get(case_id, False) or seen[text]
        for text in negatives:
            fp.add(flagged(scanner, text, timer, sizes), text, True, keep)
        out[suite] = {"detection": det, "fp": fp, "cases": len(cases), "cases_detected": sum(cases.values())}
    return out


# -- other ordinary text ---------------------------------------------------------------------------

def run_extra(scanner: Scanner, data: Path, scifact_limit: int | None, keep: int, timer: list[float],
              sizes: list[int]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    corpus = data / "beir_scifact" / "corpus.jsonl"
    if corpus.exists():
        fp = Tally()
        with corpus.open(encoding="utf-8") as f:
            for i, line in enumerate(f):
                if scifact_limit is not None and i >= scifact_limit:
                    break
                row = json.loads(line)
                text = f"{row.get('title', '')}\n{row['text']}"
                fp.add(flagged(scanner, text, timer, sizes), text, True, keep)
        out["scifact"] = fp
    if DEMO_DOCS.is_dir():
        fp, det = Tally(), Tally()
        for path in sorted(DEMO_DOCS.iterdir()):
            if path.suffix not in {".md", ".txt", ".html"}:
                continue
            text = path.read_text(encoding="utf-8")
            planted = path.name == "supplier-faq.html"  # the demo's documented injection fixture
            (det if planted else fp).add(flagged(scanner, text, timer, sizes), path.name, not planted, keep)
        out["demo_docs"] = fp
        out["demo_planted"] = det
    return out


# -- speed -----------------------------------------------------------------------------------------

def flagged(scanner: Scanner, text: str, timer: list[float], sizes: list[int]) -> bool:
    start = time.perf_counter()
    flags = scanner.scan(text)
    timer.append(time.perf_counter() - start)
    sizes.append(len(text))
    return bool(flags)


def speed_4k(scanner: Scanner, texts: Iterable[str], rounds: int) -> dict[str, float]:
    """Mean and p99 microseconds to scan 4,000-character texts cut from the clean corpora."""
    joined = "\n".join(texts)
    chunks = [joined[i:i + 4000] for i in range(0, len(joined) - 4000, 4000)][:200]
    if not chunks:
        return {}
    samples: list[float] = []
    for _ in range(rounds):
        for chunk in chunks:
            start = time.perf_counter_ns()
            scanner.scan(chunk)
            samples.append((time.perf_counter_ns() - start) / 1000)
    samples.sort()
    return {"scan_4k_us_mean": round(statistics.fmean(samples), 1),
            "scan_4k_us_p99": round(samples[int(len(samples) * 0.99)], 1), "scan_4k_samples": len(samples)}


# -- report ----------------------------------------------------------------------------------------

def load_scanner(spec: str) -> Scanner:
    if spec == "pattern":
        return PatternScanner()
    module, _, attr = spec.partition(":")
    factory = getattr(importlib.import_module(module), attr or "make_scanner")
    scanner = factory()
    if not isinstance(scanner, Scanner):
        raise SystemExit(f"{spec} did not return a Scanner (an object with scan(text) -> list[Flag])")
    return scanner


def pct(t: Tally) -> str:
    return "    -" if t.rate is None else f"{t.rate * 100:5.1f}% ({t.hits}/{t.n})"


def show(title: str, examples: list[str], width: int = 220) -> None:
    for text in examples:
        print(f"    {title}: {_squash(text)[:width]!r}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data",
                        help="shared data folder (default ../shared/data from the repository root)")
    parser.add_argument("--scanner", default="pattern", help="'pattern' or module:factory returning a Scanner")
    parser.add_argument("--table-contexts", type=int, default=100, help="BIPIA table contexts used (of 900)")
    parser.add_argument("--scifact", type=int, default=2000, help="SciFact abstracts scanned for false alarms")
    parser.add_argument("--show", type=int, default=0, help="print this many misses and false alarms per set")
    args = _quick.parse(parser, table_contexts=5, scifact=50)
    data: Path = args.data
    if not (data / "bipia").is_dir() or not (data / "agentdojo").is_dir():
        sys.exit(f"shared data not found: expected {data}/bipia and {data}/agentdojo "
                 "(the repository's sibling folder shared/data; pass --data to point elsewhere)")
    scanner = load_scanner(args.scanner)
    timer: list[float] = []
    sizes: list[int] = []
    keep = args.show
    bipia = run_bipia(scanner, data / "bipia", {"table": args.table_contexts}, keep, timer, sizes)
    dojo = run_agentdojo(scanner, data / "agentdojo", keep, timer, sizes)
    extra = run_extra(scanner, data, args.scifact, keep, timer, sizes)
    clean_texts = bipia_contexts(data / "bipia", "email", None) + bipia_contexts(data / "bipia", "code", None)
    speed = speed_4k(scanner, clean_texts + bipia_contexts(data / "bipia", "table", 40), rounds=5)

    figures: dict[str, Any] = {"scanner": args.scanner, "table_contexts": args.table_contexts}
    print(f"scanner: {args.scanner}\n\nBIPIA (detection on attacked contexts; false alarms on clean ones)")
    print(f"{'task':<7}{'split':<9}{'detection':>22}{'false alarms':>22}")
    det_split: dict[str, list[Tally]] = {"tune": [], "heldout": [], "all": []}
    fp_split: dict[str, list[Tally]] = {"tune": [], "heldout": [], "all": []}
    for task, r in bipia.items():
        for split in ("tune", "heldout", "all"):
            d = r["detection_all"] if split == "all" else r["detection"][split]
            f = r["fp_all"] if split == "all" else r["fp"][split]
            det_split[split].append(d)
            fp_split[split].append(f)
            print(f"{task:<7}{split:<9}{pct(d):>22}{pct(f):>22}")
            figures[f"bipia_{task}_{split}_detection"] = d.rate
            figures[f"bipia_{task}_{split}_fp"] = f.rate
        figures[f"bipia_{task}_cross_detection"] = r["detection"]["cross"].rate
        print(f"{'':<7}{'cross':<9}{pct(r['detection']['cross']):>22}   (tune categories in held-out contexts "
              "and the reverse)")
        print("        by position: " + ", ".join(f"{p} {t.rate:.3f}" for p, t in r["per_position"].items()))
        for p, t in r["per_position"].items():
            figures[f"bipia_{task}_{p}_detection"] = t.rate
        if keep:
            show("missed", r["detection"]["heldout"].examples + r["detection"]["tune"].examples)
            show("false alarm", r["fp"]["tune"].examples + r["fp"]["heldout"].examples)
    for split in ("tune", "heldout", "all"):
        d = Tally(sum(t.hits for t in det_split[split]), sum(t.n for t in det_split[split]))
        f = Tally(sum(t.hits for t in fp_split[split]), sum(t.n for t in fp_split[split]))
        print(f"{'BIPIA':<7}{split:<9}{pct(d):>22}{pct(f):>22}")
        figures[f"bipia_{split}_detection"] = d.rate
        figures[f"bipia_{split}_fp"] = f.rate
        figures[f"bipia_{split}_n_attacked"] = d.n
        figures[f"bipia_{split}_n_clean"] = f.n
    print("\nBIPIA detection by attack category (all contexts and positions; [h] = held-out category)")
    for task, attacks_file in (("email", "text_attack_train.json"), ("code", "code_attack_train.json")):
        names = {name: idx for name, idx, _ in bipia_attacks(data / "bipia" / attacks_file)}
        tallies = bipia[task]["per_category"]
        if task == "email":  # text attacks: email and table together
            tallies = {k: Tally(v.hits + bipia["table"]["per_category"][k].hits,
                                v.n + bipia["table"]["per_category"][k].n) for k, v in tallies.items()}
        for name, t in tallies.items():
            tag = "[h]" if names[name] % 2 else "   "
            print(f"  {tag} {name:<38}{t.rate:>7.3f}")
            figures[f"bipia_category_{re.sub(r'[^a-z]+', '_', name.lower()).strip('_')}"] = t.rate

    print("\nAgentDojo important_instructions (positives: injected tool outputs; negatives: clean outputs and "
          "environment text)")
    print(f"{'suite':<9}{'split':<9}{'injected outputs':>22}{'attack cases':>16}{'false alarms':>22}")
    for suite, r in dojo.items():
        split = "tune" if suite == "banking" else "heldout"
        print(f"{suite:<9}{split:<9}{pct(r['detection']):>22}{r['cases_detected']:>9}/{r['cases']:<6}"
              f"{pct(r['fp']):>22}")
        figures[f"agentdojo_{suite}_detection"] = r["detection"].rate
        figures[f"agentdojo_{suite}_case_detection"] = round(r["cases_detected"] / r["cases"], 4)
        figures[f"agentdojo_{suite}_fp"] = r["fp"].rate
        figures.update({f"agentdojo_{suite}_n_injected": r["detection"].n, f"agentdojo_{suite}_n_cases": r["cases"],
                        f"agentdojo_{suite}_n_clean": r["fp"].n})
        if keep:
            show("missed", r["detection"].examples)
            show("false alarm", r["fp"].examples)

    print("\nOther ordinary text (false alarms)")
    for name in ("scifact", "demo_docs"):
        if name in extra:
            print(f"  {name:<12}{pct(extra[name]):>22}")
            figures[f"{name}_fp"] = extra[name].rate
            figures[f"{name}_n"] = extra[name].n
            if keep:
                show("false alarm", extra[name].examples)
    if "demo_planted" in extra:
        print(f"  demo planted injection detected: {extra['demo_planted'].hits}/{extra['demo_planted'].n}")
        figures["demo_planted_detection"] = extra["demo_planted"].rate

    total_kb = sum(sizes) / 1000
    per_kb = sum(timer) * 1e6 / total_kb if total_kb else 0.0
    figures.update({"scans": len(timer), "scan_us_per_kb": round(per_kb, 1),
                    "scan_us_mean": round(statistics.fmean(timer) * 1e6, 1), **speed})
    print(f"\nSpeed: {len(timer)} scans, {per_kb:.1f} us per KB, mean {figures['scan_us_mean']} us per text; "
          f"4,000-char texts: mean {speed.get('scan_4k_us_mean')} us, p99 {speed.get('scan_4k_us_p99')} us")
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
