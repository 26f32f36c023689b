"""The public trace formats: how each is recognised, and which of its columns mean what.

A format is recognised by its header (CSV) or the keys of its first record
(JSON lines); its columns are located by name, so extra or reordered columns
do not matter. Each names the columns of the roles a record has:

  time     when the request arrived (`unit` seconds per unit; a date-time for Azure)
  new      its prompt tokens          out   its output tokens
  session  what links it to earlier requests (BurstGPT v2's session, Bailian's chat)
  parent   the request it follows (Bailian's parent_chat_id; -1: none)
  turn     its turn number where recorded
  hash_ids the content ids of its prompt's blocks (`block` tokens each)

serQ's own `session,turn,new,out,think[,forced]` has no entry here: it is read
by sq.traces.serq, exactly as pyserq 0.1.2 reads it.
"""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Format:
    name: str
    title: str                     # in messages
    json: bool
    columns: dict                  # role -> column name or JSON key (required)
    optional: dict = field(default_factory=dict)   # role -> name, used when present
    kinds: dict = field(default_factory=dict)      # role -> scanner code (default `n`)
    unit: float = 1.0              # seconds per unit of `time`
    block: int = 0                 # tokens per hash_ids block

    def help(self) -> str:
        names = ", ".join(self.columns.values())
        return f"help: {self.title} records have {names}"


FORMATS = {f.name: f for f in (
    Format("azure", "Azure LLM inference trace", False,
           {"time": "TIMESTAMP", "new": "ContextTokens", "out": "GeneratedTokens"},
           kinds={"time": "t"}),
    Format("burstgpt", "BurstGPT", False,
           {"time": "Timestamp", "new": "Request tokens", "out": "Response tokens"},
           optional={"session": "Session ID"}, kinds={"session": "k"}),
    Format("vidur", "Vidur request trace", False,
           {"time": "arrived_at", "new": "num_prefill_tokens", "out": "num_decode_tokens"}),
    Format("mooncake", "Mooncake trace", True,
           {"time": "timestamp", "new": "input_length", "out": "output_length"},
           optional={"hash_ids": "hash_ids"}, kinds={"hash_ids": "a"}, unit=1e-3, block=512),
    Format("bailian", "Qwen Bailian trace", True,
           {"time": "timestamp", "new": "input_length", "out": "output_length", "session": "chat_id",
            "parent": "parent_chat_id"},
           optional={"turn": "turn", "hash_ids": "hash_ids"},
           kinds={"session": "k", "parent": "k", "hash_ids": "a"}, block=16),
    Format("vllm", "vLLM per-request results", True,
           {"time": "arrival_time", "new": "input_toks", "out": "output_toks"}),
)}

SERQ = "serq"
NAMES = (SERQ, *FORMATS)


def recognise(names: list[str], json: bool) -> Format | None:
    """The format whose required columns (or keys) are all among `names`; the most specific first."""
    present = set(names)
    for fmt in sorted(FORMATS.values(), key=lambda f: -len(f.columns)):
        if fmt.json == json and set(fmt.columns.values()) <= present:
            return fmt
    return None
