"""Copy every ```serq example of the spec into tests/programs/spec/, one file each.

Run once by hand (it needs pyserq 0.1.2, the reference, to label each example):

    python tests/programs/extract_spec_examples.py SPEC_DIR   # the serQ spec's folder

Files are named `chNN_MM.sq` (chapter, 1-based index of the example in that
chapter). An example whose first line is `// lib/NAME.sq` is a library the
other examples `use`: it is written to spec/lib/NAME.sq instead. Each program
gets a `// sq-test:` header (see tests/helpers/oracle.py):

* the spec says that chapter examples run with `run { horizon 100; }` unless
  stated otherwise, so an example the reference rejects only for the missing
  horizon gets `horizon=100`;
* an example the reference still rejects gets `error="…"`: the headline of
  the reference's message.

The probes of probes/probes.json (the programs chapters 04–06 and 09 cite)
are written as `probe_ID.sq` with their overrides in the header, labelled the
same way. Trace files the examples name are copied from the spec's probes
folder when they exist there; `tr1.csv` (chapter 02 §3.1 prints it but does
not ship it) was written by hand from the text.
"""
from __future__ import annotations

import json
import re
import shutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))   # the repository root, for tests.helpers

from tests.helpers.oracle import headline, pyserq_compile  # noqa: E402

FENCE = re.compile(r"^```serq[^\n]*\n(.*?)^```", re.S | re.M)


def examples(spec_dir: Path):
    """(chapter number, index in chapter, text) for every serq fence, in file order."""
    for md in sorted(spec_dir.glob("[0-9][0-9]-*.md")):
        chapter = int(md.name[:2])
        for i, m in enumerate(FENCE.finditer(md.read_text(encoding="utf-8")), 1):
            yield chapter, i, m.group(1)


def write_labelled(path: Path, text: str, overrides: dict, *, default_horizon: bool) -> str:
    """Write `text` under a `// sq-test:` header that records what the reference does with it.

    The header line is written before compiling, so the line numbers in the
    reference's messages are those of the file as it is kept.
    """
    def attempt(over: dict) -> tuple[str, object]:
        keys = " ".join(f"{k}={_json_str(v)}" for k, v in over.items())
        header = f"// sq-test: {keys}".rstrip()
        path.write_text(header + "\n" + text, encoding="utf-8")
        return header, pyserq_compile(path=str(path), **over)

    header, outcome = attempt(overrides)
    if default_horizon and not outcome.accepted and "no horizon" in outcome.message:
        header, outcome = attempt({**overrides, "horizon": 100})
    if not outcome.accepted:
        header = f"{header} error={_json_str(headline(outcome.message))}"
        path.write_text(header + "\n" + text, encoding="utf-8")
    return header


def _json_str(value) -> str:
    return json.dumps(value, ensure_ascii=False)


def probes(spec_dir: Path):
    """(file stem, source, overrides) for every probe of probes.json."""
    for probe in json.loads((spec_dir / "probes" / "probes.json").read_text(encoding="utf-8")):
        stem = "probe_" + re.sub(r"[^\w-]", "_", probe["id"])
        yield stem, probe["source"], probe["overrides"]


def main(spec_dir: Path) -> None:
    out = HERE / "spec"
    (out / "lib").mkdir(parents=True, exist_ok=True)
    programs = []
    for chapter, i, text in examples(spec_dir):
        lib = re.match(r"// (lib/[\w./-]+\.sq)\s*\n", text)
        if lib:
            (out / lib.group(1)).write_text(text, encoding="utf-8")
            continue
        programs.append((out / f"ch{chapter:02d}_{i:02d}.sq", text))
    for csv in re.findall(r'trace\s+"([^"]+)"', "".join(text for _, text in programs)):
        src = spec_dir / "probes" / csv
        if src.exists():
            shutil.copy(src, out / csv)
    for path, text in programs:
        print(f"{path.name}: {write_labelled(path, text, {}, default_horizon=True)}")
    for stem, source, overrides in probes(spec_dir):
        text = source if source.endswith("\n") else source + "\n"
        path = out / f"{stem}.sq"
        print(f"{path.name}: {write_labelled(path, text, overrides, default_horizon=False)}")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python tests/programs/extract_spec_examples.py SPEC_DIR")
    main(Path(sys.argv[1]))
