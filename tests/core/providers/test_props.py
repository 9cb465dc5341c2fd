"""llama.cpp's ``/props``: where it is and which number is the window."""

from io_tui.core.providers.openai_compat import props_url, props_window


def test_props_is_beside_the_v1_api() -> None:
    assert props_url("http://127.0.0.1:8080/v1") == "http://127.0.0.1:8080/props"
    assert props_url("http://127.0.0.1:8080/v1/") == "http://127.0.0.1:8080/props"
    assert props_url("http://host/llm") == "http://host/llm/props"


def test_the_window_is_n_ctx_of_the_default_generation_settings_or_the_top_level() -> None:
    assert props_window({"default_generation_settings": {"n_ctx": 8192}, "n_ctx": 32768}) == 8192
    assert props_window({"n_ctx": 4096}) == 4096
    for bad in (None, [], {}, {"n_ctx": "4096"}, {"n_ctx": 0}, {"n_ctx": True}):
        assert props_window(bad) is None
