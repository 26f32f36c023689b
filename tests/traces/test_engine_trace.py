"""Trace replay (spec 02 §3, 09 §9.7): the file format, its errors, and the replay itself against pyserq."""
from __future__ import annotations

import json
import math

import pytest

from sq.errors import SqError
from sq.lower.lowering import lower
from tests.helpers.spec_data import SPEC_CORPUS

pyserq = pytest.importorskip("pyserq")
_engine = pytest.importorskip("sq._engine")

SESSION = "session { loop { turn; observe n = new; observe o = out; observe t = think; observe f = forced;\n" \
          "          observe m = more; run d (1); branch (turn_no >= 3 || !more) { end; } } }"


def _both(tmp_path, monkeypatch, csv: str, workload: str, **overrides):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "t.csv").write_text(csv)
    overrides.setdefault("horizon", 100)
    program = pyserq.compile(source=f"stage d : delay; workload {{ {workload} }}\n{SESSION}", **overrides)
    return pyserq.run(program), _engine.run(lower(json.loads(program.to_json())))


# the spec's example corpus, and two sessions whose ids are not whole numbers
CORPUS = SPEC_CORPUS + """1.9,0,5,5,5
1.2,0,6,6,6
"""


@pytest.mark.parametrize("workload, seed", [
    ('arrive batch(9); trace "t.csv" ordered;', 1),
    ('arrive batch(9); trace "t.csv";', 2),
    ('arrive poisson(2); trace "t.csv";', 5),
    ('arrive closed(2); trace "t.csv"; init { set x = ~exp(1); } turn { set new = new + x; }', 3),
])
def test_replay_matches_pyserq(tmp_path, monkeypatch, workload, seed):
    ref, raw = _both(tmp_path, monkeypatch, CORPUS, workload, seed=seed, horizon=30)
    assert (raw.events, raw.arrivals, raw.ended, raw.turns) == (ref.events, ref.arrivals, ref.ended, ref.turns)
    for o in raw.observes:
        r = ref.observes[o.name]
        assert o.sessions.tolist() == list(r.sessions) and o.turns.tolist() == list(r.turns)
        assert all(a == b or (math.isnan(a) and math.isnan(b)) for a, b in zip(o.samples.tolist(), r.samples))
        assert len(o.samples) == len(r.samples)


@pytest.mark.parametrize("csv", [
    "session,turn,new,out,think\n1,0,5,2\n",
    "session,turn,new,out,think\n1,0, 5,2,0\n",
    "# only a comment\n",
    "1,0,1_0,2,0\n",
    "x,0,1,1,0\n",
    "1,0,1,1,0,5,6\n",
    "Session,turn,new,out,think\n1,0,1,1,0\n",
])
def test_bad_trace_file_gives_the_reference_message(tmp_path, monkeypatch, csv):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "t.csv").write_text(csv)
    program = pyserq.compile(source='stage d : delay; workload { arrive batch(1); trace "t.csv"; }\n'
                                    'session { turn; run d (1); }', horizon=10)
    with pytest.raises(ValueError) as ref:
        pyserq.run(program)
    with pytest.raises(SqError) as ours:
        _engine.run(lower(json.loads(program.to_json())))
    assert str(ref.value) == "\n".join((ours.value.message,) + ours.value.notes)


def test_missing_trace_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    program = pyserq.compile(source='stage d : delay; workload { arrive batch(1); trace "nope.csv"; }\n'
                                    'session { turn; run d (1); }', horizon=10)
    with pytest.raises(SqError, match=r"cannot read trace nope.csv: No such file or directory \(os error 2\)"):
        _engine.run(lower(json.loads(program.to_json())))
