"""Content arrays: what add_message accepts, how it says no, how blocks render
and what they count; and the vendored schema against the installed SDK's types."""

from __future__ import annotations

import typing
from typing import Any

import pytest
import typing_extensions

from recap.api.validate import prepare_message
from recap.core.content import blocks as vendored
from recap.core.content import media
from recap.core.content.render import RESULT_CHARS, digest, parse_links
from recap.errors import InvalidInput
from tests.sdk_request import sdk_problem
from tests.transcripts import call, image, pdf, png, result, scripted, thinking

pytestmark = pytest.mark.unit

CAP = 10_000


def prepare(role: str, content: Any, cap: int = CAP):
    return prepare_message(role, content, False, max_inline_chars=cap)


@pytest.mark.parametrize(("role", "content", "says"), [
    ("user", [], "content is an empty list"),
    ("user", [{"type": "text"}], "content[0] (text): text: Field required"),
    ("user", [{"type": "text", "text": "  "}], "content[0] (text): text is empty"),
    ("user", [{"type": 7, "x": 1}], "content[0]: type must be a string, got int"),
    ("user", [{"type": " ", "x": 1}], "content[0] ( ): type is empty"),
    ("system", [{"type": "video", "x": 1}], "content[0] (video): system messages cannot hold"),
    ("user", ["hi"], "content[0]: Input should be a valid dictionary"),
    ("user", [{"text": "hi"}], "content[0]: not a block with a 'type'"),
    ("user", [{"type": "text", "text": "a", "colour": "red"}],
     "content[0] (text): colour: Extra inputs are not permitted"),
    ("assistant", [{"type": "tool_use", "id": "bad id!", "name": "f", "input": {}}],
     "content[0] (tool_use): id: String should match pattern"),
    ("assistant", [call("t1"), call("t1")], "content[1] (tool_use): id 't1' is used by an"),
    ("assistant", [{"type": "tool_use", "id": "t1", "name": "f", "input": []}],
     "content[0] (tool_use): input: Input should be a valid dictionary"),
    ("user", [{"type": "tool_result", "tool_use_id": "t1", "is_error": "yes"}],
     "content[0] (tool_result): is_error: Input should be a valid boolean"),
    ("user", [{"type": "tool_result", "tool_use_id": "t1",
               "content": [{"type": "text", "text": "ok"}, {"type": "tool_use"}]}],
     "content[0] (tool_result): content[1]: unknown type 'tool_use'"),
    ("user", [{"type": "image", "source": {"type": "base64", "media_type": "image/bmp",
                                           "data": "AAAA"}}],
     "content[0] (image): source.media_type: Input should be"),
    ("user", [{"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                           "data": "not base64!"}}],
     "content[0] (image): source.data is not valid base64"),
    ("user", [{"type": "image", "source": {"type": "base64", "media_type": "image/jpeg",
                                           "data": png(2, 2)}}],
     "is not image/jpeg data"),
    ("user", [thinking()], "content[0] (thinking): user messages cannot hold thinking"),
    ("assistant", [image()], "assistant messages cannot hold image blocks"),
    ("system", [call("t1")], "system messages cannot hold tool_use blocks"),
    ("user", [{"type": "text", "text": "a\x00b"}], "content[0] (text).text contains a NUL"),
    ("assistant", [call("t1", q="\ud800")], "content[0] (tool_use).input.q contains a lone"),
    ("assistant", [call("t1", q=float("nan"))], "input.q is nan, which JSON cannot hold"),
    ("assistant", [{"type": "thinking", "thinking": "x"}],
     "content[0] (thinking): signature: Field required"),
])
def test_bad_content_is_refused_naming_block_and_field(role: str, content: Any,
                                                       says: str) -> None:
    with pytest.raises(InvalidInput) as err:
        prepare(role, content)
    assert says in str(err.value)


def test_inline_base64_is_capped_and_the_error_names_the_setting() -> None:
    with pytest.raises(InvalidInput) as err:
        prepare("user", [image(400, 400), image(400, 400)], cap=len(png(400, 400)) + 10)
    assert "content[1] (image)" in str(err.value)
    assert "RECAP_MAX_INLINE_BASE64_CHARS" in str(err.value)
    assert f"the cap is {len(png(400, 400)) + 10}" in str(err.value)


def test_cache_control_is_dropped_everything_else_kept_as_given() -> None:
    block = {"type": "text", "text": "hi", "cache_control": {"type": "ephemeral"}}
    nested = result("t1")
    nested["content"] = [dict(block)]
    msg = prepare("user", [block, nested])
    assert msg.blocks == [{"type": "text", "text": "hi"},
                          {"type": "tool_result", "tool_use_id": "t1",
                           "content": [{"type": "text", "text": "hi"}]}]
    # A key named cache_control inside a tool's input is the app's data.
    assert prepare("assistant", [call("t2", cache_control="x")]).blocks == [
        call("t2", cache_control="x")]


def test_rendering_is_compact_and_never_binary() -> None:
    long = "line of output " * 400
    d = digest([call("toolu_9", "search", query="flights LIS-BER 14 March", page=2),
                result("toolu_9", long, error=True), image(800, 600),
                {"type": "document", "title": "Invoice",
                 "source": {"type": "base64", "media_type": "application/pdf", "data": pdf(3)}},
                thinking("secret reasoning")])
    assert '[tool call search (toolu_9): {"query": "flights LIS-BER 14 March", "page": 2}]' \
        in d.text
    assert "[tool result for toolu_9, error: line of output" in d.text
    assert "characters of this tool result left out" in d.text
    assert len(d.text) < RESULT_CHARS + 600
    assert "[image: image/png, 800x600" in d.text
    assert '[document "Invoice": application/pdf, 3 pages' in d.text
    assert "[thinking: 16 characters]" in d.text and "secret" not in d.text
    assert png(800, 600)[:40] not in d.text
    # Counting reads everything the request can carry, and the media estimates.
    assert long in d.countable and "secret reasoning" in d.countable
    assert d.media_tokens == 640 + 3 * media.PDF_PAGE_TOKENS
    assert (d.calls, d.answers) == (("toolu_9",), ("toolu_9",))


@pytest.mark.parametrize(("size", "tokens"), [
    ((200, 200), 54),  # 200*200/750
    ((1000, 1000), 1334),  # the documented table: ~1334 tokens for 1000x1000
    ((4000, 3000), 1534),  # downscaled to fit 1568 px and ~1.15 MP
    (None, media.IMAGE_DEFAULT_TOKENS),
])
def test_image_tokens_follow_the_documented_estimate(size: tuple[int, int] | None,
                                                     tokens: int) -> None:
    assert media.image_tokens(size) == tokens


def test_url_images_count_the_default_and_links_round_trip() -> None:
    msg = prepare("user", [{"type": "image", "source": {"type": "url",
                                                        "url": "https://x.test/a.png"}},
                           result("t1"), result("t2")])
    assert msg.media_tokens == media.IMAGE_DEFAULT_TOKENS
    assert "[image: url https://x.test/a.png]" in msg.content
    assert parse_links(msg.tool_links) == ((), ("t1", "t2"))


# -- the vendored schema against the installed SDK ---------------------------------

def _sdk_keys(name: str) -> tuple[set[str], set[str], set[str]]:
    import anthropic.types as sdk

    hints = typing_extensions.get_type_hints(getattr(sdk, name), include_extras=True)
    required = {k for k, v in hints.items()
                if typing_extensions.get_origin(v) in (typing.Required,
                                                       typing_extensions.Required)}
    tags = set(typing.get_args(typing_extensions.get_args(hints["type"])[0]))
    return set(hints), required, tags


@pytest.mark.parametrize(("model", "sdk_name"), [
    (vendored.TextBlock, "TextBlockParam"), (vendored.ImageBlock, "ImageBlockParam"),
    (vendored.DocumentBlock, "DocumentBlockParam"), (vendored.ToolUseBlock, "ToolUseBlockParam"),
    (vendored.ToolResultBlock, "ToolResultBlockParam"),
    (vendored.ThinkingBlock, "ThinkingBlockParam"),
    (vendored.RedactedThinkingBlock, "RedactedThinkingBlockParam"),
    (vendored.Base64ImageSource, "Base64ImageSourceParam"),
    (vendored.URLSource, "URLImageSourceParam"), (vendored.URLSource, "URLPDFSourceParam"),
    (vendored.FileSource, "FileImageSourceParam"),
    (vendored.FileSource, "FileDocumentSourceParam"),
    (vendored.Base64PDFSource, "Base64PDFSourceParam"),
    (vendored.PlainTextSource, "PlainTextSourceParam"),
    (vendored.ContentSource, "ContentBlockSourceParam"),
])
def test_each_vendored_model_mirrors_its_sdk_type(model: Any, sdk_name: str) -> None:
    keys, required, tags = _sdk_keys(sdk_name)
    fields = model.model_fields
    assert set(fields) <= keys, f"{model.__name__} has fields the SDK's {sdk_name} lacks"
    assert {k for k, f in fields.items() if f.is_required()} == required
    assert set(typing.get_args(fields["type"].annotation)) == tags


def test_what_we_accept_the_sdk_types_accept() -> None:
    for role, content in scripted():
        msg = prepare(role, content, cap=10**6)
        api_role = "assistant" if role == "assistant" else "user"
        body = {"messages": [{"role": api_role, "content": msg.blocks or msg.content}]}
        assert sdk_problem(body) is None, (role, content)


def test_an_sdk_response_can_be_stored_as_dumped() -> None:
    from anthropic.types import TextBlock, ThinkingBlock, ToolUseBlock

    reply = [ThinkingBlock(type="thinking", thinking="hm", signature="sig"),
             TextBlock(type="text", text="Checking."),
             ToolUseBlock(type="tool_use", id="toolu_5", name="f", input={"a": None})]
    msg = prepare("assistant", [b.model_dump() for b in reply])
    assert msg.blocks == [{"type": "thinking", "thinking": "hm", "signature": "sig"},
                          {"type": "text", "text": "Checking."},
                          {"type": "tool_use", "id": "toolu_5", "name": "f", "input": {"a": None}}]
