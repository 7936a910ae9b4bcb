"""Attacks on "fork from here" (web/fork_page.py): what a post to `/threads/ID/fork` may do.

A fork makes a thread and runs it from the server, so its route is guarded as every request that
changes something (web/guard.py): without the token (401) or with another site's `Origin`
(403) nothing is read or made. What the post carries is hostile too: a fork point that is no
number ("²", 5,000 digits, "-1", none), a step the thread has not reached, and a reply the
role's contract refuses are each answered 422 with the error in words (never a 500, never a
traceback) and make no thread. The control: the same post with the token, the server's own
Origin, a step the moderator allows and a reply that fits the contract is a 303 to the new
thread, which exists.
"""

from __future__ import annotations

import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

from orchestrator.run.session import Session, open_store
from tests.test_web_fork import approved
from tests.web_helpers import Served, served


def post(server: Served, thread_id: str, fields: dict[str, str], **headers: str) -> Any:
    request = urllib.request.Request(
        server.base + f"threads/{thread_id}/fork",
        data=urllib.parse.urlencode(fields).encode(),
        headers={
            **server.headers(**{"Content-Type": "application/x-www-form-urlencoded"}),
            **headers,
        },
        method="POST",
    )
    opener = urllib.request.build_opener(NoRedirect)
    try:
        with opener.open(request, timeout=60) as answer:
            return answer.status, answer.read().decode(), dict(answer.headers)
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode(), dict(exc.headers)


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


def test_hostile_fork_posts_are_refused_in_words_and_make_no_thread(tmp_path: Path) -> None:
    project, original = approved(tmp_path)
    with served(project.store, env=project.env()) as server:
        for said in ("²", "9" * 5000, "-1", ""):
            status, text, _ = post(server, original, {"step": said})
            assert status == 422, (said[:10], status, text[:300])
            assert "is not a step number to fork" in text and "Traceback" not in text
        status, text, _ = post(server, original, {"step": "7"})
        assert status == 422 and "no step 7 to fork at" in text, text[:300]
        refused = {"step": "2", "status": "yes", "field.budget": "lots", "title": "t"}
        status, text, _ = post(server, original, refused)
        assert status == 422, (status, text[:300])
        assert "budget" in text and "was not accepted" in text
        assert 'value="lots"' in text  # shown again as typed
        good = {"step": "2", "status": "no", "field.why": "too dear"}
        status, text, _ = post(server, original, good, Origin="http://evil.example")
        assert status == 403
        status, text, _ = post(server, original, good, Authorization="token wrong")
        assert status == 401
        session = Session(open_store(project.store, readonly=True))
        assert [r.id for r in session.threads()] == [original]  # none of them made a thread

        # The control: the same good post with the token and the server's own Origin makes
        # the fork, and sends its page.
        status, _, headers = post(server, original, good)
        assert status == 303, status
        location = headers.get("location") or headers.get("Location") or ""
        forked = location.rsplit("/", 1)[-1]
        assert location.startswith("/threads/") and forked != original
        assert {r.id for r in session.threads()} == {original, forked}
