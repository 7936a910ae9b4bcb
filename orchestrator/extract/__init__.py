"""The extract pipeline (docs/format.md section 4): a role's reply text -> validated `Output`.

Theory of operation
===================

A role replies in Markdown that begins with a YAML frontmatter block. Models are messy, so the
pipeline is tolerant about *where* the block is and strict about *what* it says. It runs five
stages; each either passes its result on or raises `ExtractError` with concrete, self-contained
sentences a model can act on when the reply is sent back for repair.

1. Normalize and locate (`locate.py`). A UTF-8 BOM is dropped and CRLF/CR line ends become
   `\\n`. The block opens with a `---` line, which may follow blank lines, a short preamble (at
   most `MAX_PREAMBLE_LINES` non-blank lines and `MAX_PREAMBLE_CHARS` characters, such as "Here
   is my reply:") and a fence that wraps the whole reply (```` ```markdown ````, ```` ```md ````,
   ```` ```yaml ````, ```` ```yml ````, ```` ```text ```` or a bare ```` ``` ````). It closes with
   a `---` or `...` line at column 0; inside a wrapping fence, the fence's own closing line also
   ends a block that was never closed with `---`. A `---` after a longer preamble, or after
   fenced code, is a Markdown rule in an essay, not frontmatter; the preamble is dropped. When
   there is no such `---` block, a fenced ```` ```yaml ```` or ```` ```yml ```` block holding a
   top-level `$status:` or `status:` line (or a bare fence holding `$status:`) is the
   frontmatter, wherever it is, and the text before and after it, joined by a blank line, is the
   body; two such blocks are ambiguous and refused. Otherwise the body is everything after the
   block, without its leading blank lines and trailing whitespace, and without the closing line
   of a wrapping fence (text after that line, a model's sign-off, stays in the body).

2. Parse YAML (`parse.py`, whose `parse_reply` runs stages 1 and 2). The parser is
   `Yaml12Loader` (libyaml when available) and values are built from its events, following the
   YAML 1.2 core schema: only `true`/`false` are booleans (`yes`, `no`, `on`, `off` stay
   strings), integers are decimal, `0o` octal or `0x` hex, and there are no timestamps,
   sexagesimal numbers or merge keys (`2024-05-01` and `1:30` stay strings), so a value keeps
   the text the model wrote. Keys are kept as written (`1:` is the key "1"). A duplicate key,
   an anchor, an alias or a tag other than `!!str` is refused: in a reply they are almost
   always an unquoted value starting with `&`, `*` or `!`, and two `$status:` lines are
   ambiguous. Syntax errors name the frontmatter line and, for the classic cause (an unquoted
   value containing `: ` or starting with a special character), say to quote the value. YAML
   comments (` #` after a value) are comments, as in any YAML file. A block of flat
   `key: plain value` lines only (the usual reply) is read without libyaml (`flatyaml.py`),
   to the same values; any other block, and every block with an error, goes through libyaml.

3. Read the status (`status.py`). A reply without `$status` whose `status` key the schema
   does not declare has that key read as `$status` (for a single-exit role only when its value
   is `$SUSPEND`: a single-exit role has no routing key, so a stray `status` there is just a
   field). `$SUSPEND` with a non-empty string `reason` suspends the thread whatever the role's
   schema says; the output then holds only `$status` and `reason`.
   A multi-status role needs `$status` to be one of its statuses, written exactly (no case
   folding, no guessing; errors suggest the closest status). A single-exit role routes by `_`:
   it may omit `$status` or write `$status: _`; any other value is refused, telling the model to
   omit it, and `$status` is removed before validation.

4. Validate (`validate.py`) the frontmatter against the chosen status's compiled validator
   (`StatusContract.validator`), as written: nothing is coerced (`plan: 5` against
   `type: string` is an error; quoting it fixes it). Every error is reported, sorted by field
   path, naming the status and the field (`items[2].name`); a failing nested `oneOf`/`anyOf`
   reports the error of the closest alternative instead of "not valid under any of the given
   schemas". Keys starting with `$` other than `$status` are reserved (docs/format.md section 4) and refused
   unless the schema declares them.

5. Return `Output(frontmatter, body, status)` (`output.py`; `pipeline.py` runs the stages):
   `status` is the routing key (the `$status` value, `_` for a single-exit role, or
   `$SUSPEND`). An `ExtractError` carries `.status` when the reply named a status the role has
   (or `$SUSPEND`), so its errors are about that status.

The key property, checked by property-based tests: an invalid reply is never accepted, and no
input makes the pipeline raise anything but `ExtractError`.

Error sentences share one way of quoting values and naming fields (`wording.py`);
`describe_contract` (`describe.py`) words what a role's reply may carry.
"""

from .describe import describe_contract
from .locate import MAX_PREAMBLE_CHARS, MAX_PREAMBLE_LINES
from .output import ExtractError, Output
from .parse import parse_reply
from .pipeline import extract_output, extract_status_only, format_reply

__all__ = [
    "MAX_PREAMBLE_CHARS",
    "MAX_PREAMBLE_LINES",
    "ExtractError",
    "Output",
    "describe_contract",
    "extract_output",
    "extract_status_only",
    "format_reply",
    "parse_reply",
]
