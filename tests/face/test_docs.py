"""The commands and snippets in docs/*.md work as printed.

Fenced blocks are read by language, with an optional HTML comment on the line
before the fence:

* ```sh: each command (one per line, `\\` continues a line, `#` lines are
  comments) runs through bash from a scratch folder that links `examples/`, and
  must exit 0, or the status given by `<!-- exit N -->`; never a traceback.
* ```python: a page's snippets run in order in one namespace, from the same
  folder.
* ```serq: with `<!-- file: NAME -->` it is written to NAME before anything
  runs; otherwise it must compile.
* ```text with `<!-- output-of: COMMAND -->` must be exactly what COMMAND
  prints, so shown output cannot drift from what sq does.
* `<!-- no-test -->` skips the block: for output that is illustrative only.

Other languages (and untagged blocks) are prose.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

import sq

from tests.helpers import children

ROOT = Path(__file__).resolve().parents[2]
DOCS = sorted((ROOT / "docs").glob("*.md"))
COMMAND_TIMEOUT = 60  # seconds; a documented command is meant to be quick

FENCE = re.compile(r"^```(\w*)\s*$")
MARKER = re.compile(r"^<!--\s*(no-test|exit\s+\d+|file:\s*\S+|output-of:.+?)\s*-->\s*$")


@dataclass
class Block:
    doc: str
    line: int           # of the opening fence, 1-based
    lang: str
    text: str
    marker: str | None  # the comment on the line before the fence, if any

    @property
    def where(self) -> str:
        return f"{self.doc}:{self.line}"


def read_blocks(path: Path) -> list[Block]:
    lines = path.read_text(encoding="utf-8").splitlines()
    blocks, i = [], 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        start, lang = i, m.group(1)
        j = i + 1
        while j < len(lines) and lines[j].rstrip() != "```":
            j += 1
        if j == len(lines):
            raise AssertionError(f"{path.name}:{start + 1}: unclosed code block")
        prev = lines[start - 1].strip() if start > 0 else ""
        marker = MARKER.match(prev)
        blocks.append(Block(path.name, start + 1, lang, "\n".join(lines[start + 1:j]) + "\n",
                            marker.group(1) if marker else None))
        i = j + 1
    return blocks


def commands(text: str) -> list[str]:
    out, pending = [], ""
    for raw in text.splitlines():
        line = raw.rstrip()
        if not pending and (not line.strip() or line.lstrip().startswith("#")):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        out.append(pending + line)
        pending = ""
    assert not pending, f"a command ends in a line continuation: {pending!r}"
    return out


BLOCKS = {doc.name: read_blocks(doc) for doc in DOCS}


def _expected_status(block: Block) -> int:
    if block.marker and block.marker.startswith("exit"):
        return int(block.marker.split()[1])
    return 0


SHELL_CASES = [pytest.param(b, cmd, id=f"{b.where}:{cmd[:60]}")
               for blocks in BLOCKS.values() for b in blocks
               if b.lang == "sh" and b.marker != "no-test" for cmd in commands(b.text)]
OUTPUT_CASES = [pytest.param(b, id=b.where) for blocks in BLOCKS.values() for b in blocks
                if b.lang == "text" and b.marker and b.marker.startswith("output-of:")]
INLINE_SERQ = [b for blocks in BLOCKS.values() for b in blocks if b.lang == "serq" and b.marker is None]


@pytest.fixture(scope="module")
def workdirs(tmp_path_factory):
    """One scratch folder per page: `examples/` linked in, the page's files written,
    and `python` on PATH meaning this interpreter, importing the sq under test (tests/helpers/children.py)."""
    made: dict[str, Path] = {}
    bindir = children.python_on_path(tmp_path_factory.mktemp("bin")).parent

    def get(doc: str) -> Path:
        if doc not in made:
            d = tmp_path_factory.mktemp(doc.replace(".", "_"))
            (d / "examples").symlink_to(ROOT / "examples")
            for b in BLOCKS[doc]:
                if b.marker and b.marker.startswith("file:"):
                    (d / b.marker.split(":", 1)[1].strip()).write_text(b.text, encoding="utf-8")
            made[doc] = d
        return made[doc]

    env = children.env()
    env["PATH"] = f"{bindir}{os.pathsep}{env.get('PATH', '')}"
    env.pop("SQ_DEBUG", None)
    return get, env


def _sh(cmd: str, cwd: Path, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "-c", cmd], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=COMMAND_TIMEOUT)


def test_docs_have_runnable_blocks():
    # a reader-facing page with no tested command would make this file check nothing
    for name in ("guide.md", "cli.md", "api.md", "differences.md"):
        assert name in BLOCKS, f"docs/{name} is missing"
        assert any(b.lang in ("sh", "python") and b.marker != "no-test" for b in BLOCKS[name]), name


@pytest.mark.parametrize("block, cmd", SHELL_CASES)
def test_shell_command(block, cmd, workdirs):
    if "sq bench" in cmd and Path(children.SQ_HOME) != ROOT:
        pytest.skip("the docs' `sq bench` block compares with pyserq through the checkout's benchmarks/reference_pyserq.py; the sq under test is installed")
    get, env = workdirs
    done = _sh(cmd, get(block.doc), env)
    want = _expected_status(block)
    assert done.returncode == want, (
        f"{block.where}: `{cmd}` exited {done.returncode}, the page says {want}\n{done.stderr[-2000:]}")
    assert "Traceback" not in done.stderr, f"{block.where}: `{cmd}` printed a traceback\n{done.stderr}"
    if want == 2:
        assert "error" in done.stderr, f"{block.where}: `{cmd}` failed without an error message"


@pytest.mark.parametrize("block", OUTPUT_CASES)
def test_shown_output_is_what_the_command_prints(block, workdirs):
    get, env = workdirs
    cmd = block.marker.split(":", 1)[1].strip()
    done = _sh(cmd, get(block.doc), env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == block.text.strip(), f"{block.where}: the page shows stale output of `{cmd}`"


def test_inline_programs_compile():
    # a program shown without a file name is still meant to be valid serQ
    for block in INLINE_SERQ:
        try:
            sq.compile(source=block.text, horizon=10)
        except sq.SqError as err:
            pytest.fail(f"{block.where}: the program does not compile: {err}")


@pytest.mark.parametrize("doc", [d for d, bs in BLOCKS.items()
                                 if any(b.lang == "python" and b.marker != "no-test" for b in bs)])
def test_python_snippets(doc, workdirs, monkeypatch, capsys):
    get, _ = workdirs
    monkeypatch.chdir(get(doc))
    namespace: dict = {"__name__": f"docs_{doc.replace('.', '_')}"}
    for b in BLOCKS[doc]:
        if b.lang != "python" or b.marker == "no-test":
            continue
        code = compile(b.text, f"<{b.where}>", "exec")
        try:
            exec(code, namespace)
        except Exception as err:  # name the block, not this harness
            pytest.fail(f"{b.where}: the snippet raised {type(err).__name__}: {err}")


def test_markers_are_understood():
    # a misspelt marker (`<!-- no test -->`) would silently run or skip the wrong block
    for doc in DOCS:
        for n, line in enumerate(doc.read_text(encoding="utf-8").splitlines(), 1):
            s = line.strip()
            if s.startswith("<!--") and s.endswith("-->"):
                assert MARKER.match(s), f"{doc.name}:{n}: unknown marker {s}"
