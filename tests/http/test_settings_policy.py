"""PUT .../settings refuses a key the session's policy ignores (422, naming the
policy and the way out), and stores it under the fixed rule."""

from __future__ import annotations

import httpx
import pytest

pytestmark = pytest.mark.system


def test_an_ignored_setting_is_refused_over_http(api: httpx.Client) -> None:
    # The test server runs the fixed rule (tests/helpers.py LOW): the session asks for
    # the adaptive policy and a trigger it would ignore.
    refused = api.put("/v1/sessions/fit-http/settings?create=true",
                      json={"policy": "adaptive", "trigger_messages": 6})
    assert refused.status_code == 422
    message = refused.json()["error"]["message"]
    assert "trigger_messages is not read by the adaptive policy" in message
    assert "policy=threshold" in message
    stored = api.put("/v1/sessions/fit-http/settings?create=true",
                     json={"policy": "threshold", "trigger_messages": 6, "keep_recent": 4})
    assert stored.status_code == 200, stored.text
