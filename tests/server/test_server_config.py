"""`scorewatch.toml`: the issue's example works as written; every mistake names its key."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from scorewatch.server.config.file import ConfigError, is_loopback_host, load_config, parse_listen
from scorewatch.server.config.scorer_entries import build_scorers
from scorewatch.server.http.auth import resolve_token
from serve_support import run_serve, write_config

pytestmark = pytest.mark.e2e

ISSUE_EXAMPLE = """\
[server]
listen = "127.0.0.1:8787"
auth_token_env = "SCOREWATCH_TOKEN"   # name of the environment variable holding the token

[judge]
model = "openai/gpt-4o-mini"          # default judge for LLM-judged scorers
model_options = { timeout = 60 }

[[scorers]]
id = "summary"
kind = "summarization"                # a prebuilt scorer by name ...
sampling = 0.25
options = { max_questions = 10 }

[[scorers]]
id = "length"
factory = "my_package.scorers:make_length_scorer"   # ... or a zero-argument factory by import path
sampling = 1.0

[live]
max_concurrency = 32
max_queue = 10000

[sinks]
sqlite = "scorewatch.db"
"""


def _package(tmp_path: Path) -> None:
    package = tmp_path / "my_package"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "scorers.py").write_text(
        textwrap.dedent(
            """
            import scorewatch as sw

            def make_length_scorer():
                return sw.create_scorer(id="len", description="length").generate_score(
                    lambda ctx: min(1.0, len(str(ctx.run.output)) / 100)
                )
            """
        )
    )


def _problems(tmp_path: Path, body: str) -> list[str]:
    path = write_config(tmp_path, body, module=False)
    with pytest.raises(ConfigError) as raised:
        load_config(path)
    assert raised.value.code == "SERVE_CONFIG_INVALID"
    return raised.value.problems


def test_the_issue_example_loads_and_builds_as_written(tmp_path: Path) -> None:
    _package(tmp_path)
    path = write_config(tmp_path, ISSUE_EXAMPLE, module=False)
    config = load_config(path)
    assert config.server.host == "127.0.0.1"
    assert config.server.port == 8787
    assert config.server.auth_token_env == "SCOREWATCH_TOKEN"
    assert [s.id for s in config.scorers] == ["summary", "length"]
    assert config.live.max_queue == 10_000
    assert config.resolve_path("scorewatch.db") == tmp_path.resolve() / "scorewatch.db"

    built = {s.id: s for s in build_scorers(config)}
    summary = built["summary"]
    assert summary.scorer.id == "summary"  # the config id labels results and telemetry
    assert summary.scorer.name == "Summarization Scorer"
    assert summary.entry.sampling.rate == 0.25
    assert summary.judge_model == "openai/gpt-4o-mini"
    assert summary.scorer.has_judge
    length = built["length"]
    assert length.scorer.id == "length"
    assert length.entry.sampling.rate is None
    assert length.source == "factory:my_package.scorers:make_length_scorer"
    assert resolve_token(config, {"SCOREWATCH_TOKEN": "s3cret"}) == "s3cret"


def test_an_unknown_key_is_named(tmp_path: Path) -> None:
    problems = _problems(
        tmp_path,
        """
        [server]
        listn = "127.0.0.1:1"
        [[scorers]]
        id = "a"
        kind = "completeness"
        [live]
        max_concueency = 3
        """,
    )
    assert "server.listn: unknown key" in problems
    assert "live.max_concueency: unknown key" in problems


def test_bad_values_name_their_key(tmp_path: Path) -> None:
    problems = _problems(
        tmp_path,
        """
        [server]
        listen = "nowhere"
        auth_token_env = "not a name"
        [[scorers]]
        id = "a"
        kind = "completeness"
        sampling = 1.5
        [[scorers]]
        id = "b"
        [live]
        max_queue = 0
        """,
    )
    text = "\n".join(problems)
    assert "server.listen: expected HOST:PORT" in text
    assert "server.auth_token_env: expected the NAME of an environment variable" in text
    assert "scorers[0].sampling: Input should be less than or equal to 1" in text
    assert "scorers[1]: set exactly one of 'kind' (a prebuilt scorer) or 'factory'" in text
    assert "live.max_queue: Input should be greater than or equal to 1" in text


def test_scorers_are_required_and_ids_unique(tmp_path: Path) -> None:
    assert _problems(tmp_path, "[server]\n") == ["scorers: required key is missing"]
    problems = _problems(
        tmp_path,
        """
        [[scorers]]
        id = "a"
        kind = "completeness"
        [[scorers]]
        id = "a"
        kind = "content-similarity"
        """,
    )
    assert any("two scorers have the id 'a'" in p for p in problems)


def test_not_toml_and_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "broken.toml"
    path.write_text("[server\nlisten=")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_config(path)
    with pytest.raises(ConfigError, match="cannot read the configuration file"):
        load_config(tmp_path / "absent.toml")


def test_building_errors_name_the_scorer_entry(tmp_path: Path) -> None:
    cases = {
        'kind = "sumarization"': "scorers[0].kind: unknown prebuilt scorer 'sumarization'; known:",
        'kind = "summarization"': "scorers[0].model: the 'summarization' scorer is judged",
        'factory = "sw_test_scorers:NOT_A_FACTORY"': "scorers[0].factory: 'sw_test_scorers:NOT_A",
        'factory = "sw_test_scorers:missing"': "scorers[0].factory: cannot import",
        'factory = "no_such_module_here:make"': "scorers[0].factory: cannot import",
        'kind = "completeness"\noptions = { bogus = 1 }': "scorers[0].options:",
        'factory = "sw_test_scorers:make_exploding_factory"': "raised RuntimeError: no scorer",
    }
    for line, expected in cases.items():
        path = write_config(tmp_path, f'[[scorers]]\nid = "x"\n{line}\n')
        config = load_config(path)
        with pytest.raises(ConfigError) as raised:
            build_scorers(config)
        assert expected in raised.value.message, (line, raised.value.message)


def test_a_named_judge_key_variable_is_read_and_its_absence_warned(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from scorewatch.judge import litellm_judge

    monkeypatch.setattr(litellm_judge, "_warned", set())  # the warning is once per process
    path = write_config(
        tmp_path,
        """
        [judge]
        model = "openai/gpt-4o-mini"
        api_key_env = "SW_TEST_JUDGE_KEY"
        [[scorers]]
        id = "summary"
        kind = "summarization"
        """,
    )
    monkeypatch.delenv("SW_TEST_JUDGE_KEY", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with caplog.at_level("WARNING", logger="scorewatch.judge"):
        [missing] = build_scorers(load_config(path))
    assert (
        "judge model 'openai/gpt-4o-mini' has no API key: set SW_TEST_JUDGE_KEY "
        "(named by api_key_env)" in caplog.text
    )
    assert missing.scorer.judge is not None
    assert "SW_TEST_JUDGE_KEY" in str(missing.scorer.judge.model.missing_api_key())  # type: ignore[union-attr]
    caplog.clear()
    monkeypatch.setenv("OPENAI_API_KEY", "sk-provider-variable")  # litellm's own fallback
    with caplog.at_level("WARNING", logger="scorewatch.judge"):
        build_scorers(load_config(path))
    assert "api_key_env names SW_TEST_JUDGE_KEY, which is not set" in caplog.text
    assert "uses OPENAI_API_KEY instead" in caplog.text
    caplog.clear()
    monkeypatch.setenv("SW_TEST_JUDGE_KEY", "sk-from-env")
    with caplog.at_level("WARNING"):
        [summary] = build_scorers(load_config(path))
    assert caplog.text == ""
    assert summary.judge_model == "openai/gpt-4o-mini"
    judge = summary.scorer.judge
    assert judge is not None
    model = judge.model
    assert getattr(model, "options", None) == {"api_key": "***"}  # passed on, and masked
    assert "sk-from-env" not in repr(judge) + repr(model)


def test_filters_and_targets_come_from_the_config(tmp_path: Path) -> None:
    path = write_config(
        tmp_path,
        """
        [[scorers]]
        id = "len"
        factory = "sw_test_scorers:make_length_scorer"
        filter = "sw_test_scorers:only_support_bot"
        [[scorers]]
        id = "len2"
        factory = "sw_test_scorers:make_length_scorer"
        targets = ["a", "b"]
        """,
    )
    from scorewatch.live import AgentCall

    built = {s.id: s for s in build_scorers(load_config(path))}

    def call(target: str) -> AgentCall:
        return AgentCall(
            input="", output="", target=target, trace_id=None, span_id=None, run_id="r"
        )

    first = built["len"].entry.filter
    second = built["len2"].entry.filter
    assert first is not None and second is not None
    assert first(call("support-bot")) and not first(call("other"))
    assert second(call("b")) and not second(call("c"))


def test_listen_parsing_and_loopback() -> None:
    assert parse_listen("[::1]:80") == ("::1", 80)
    assert parse_listen("0.0.0.0:8787") == ("0.0.0.0", 8787)
    assert is_loopback_host("127.0.0.5") and is_loopback_host("::1")
    assert is_loopback_host("localhost")
    assert not is_loopback_host("0.0.0.0")
    assert not is_loopback_host("example.internal")


def test_token_rules(tmp_path: Path) -> None:
    base = '[[scorers]]\nid = "x"\nkind = "completeness"\n'
    open_config = load_config(write_config(tmp_path, "[server]\nlisten = '0.0.0.0:0'\n" + base))
    with pytest.raises(ConfigError, match="without an auth token"):
        resolve_token(open_config, {})
    named = load_config(write_config(tmp_path, "[server]\nauth_token_env = 'SW_TOKEN'\n" + base))
    with pytest.raises(ConfigError, match="SW_TOKEN"):
        resolve_token(named, {})
    assert resolve_token(named, {"SW_TOKEN": "t"}) == "t"
    loopback = load_config(write_config(tmp_path, base))
    assert resolve_token(loopback, {}) is None


def test_the_command_refuses_a_public_address_without_a_token(tmp_path: Path) -> None:
    path = write_config(tmp_path, '[[scorers]]\nid = "x"\nkind = "completeness"\n')
    code, stderr = run_serve(path, "--listen", "0.0.0.0:0")
    assert code == 2
    assert "refusing to listen on '0.0.0.0:0'" in stderr
    assert "listening on" not in stderr


def test_check_refuses_a_public_traces_listener_without_a_token(tmp_path: Path) -> None:
    # Issue 28 item 14: `--check` said OK to what `serve` then refused.
    body = '[[scorers]]\nid = "x"\nkind = "completeness"\n[traces]\nlisten = "0.0.0.0:0"\n'
    path = write_config(tmp_path, body)
    for args in (("--check",), ()):
        code, stderr = run_serve(path, *args)
        assert code == 2, (args, stderr)
        assert "refusing to listen for traces on '0.0.0.0:0'" in stderr
        assert "listening on" not in stderr and "OK" not in stderr


def test_the_command_reports_config_errors_and_checks(tmp_path: Path) -> None:
    path = write_config(tmp_path, '[[scorers]]\nid = "x"\nkind = "completeness"\nsampling = 2\n')
    code, stderr = run_serve(path)
    assert code == 2
    assert "scorers[0].sampling" in stderr
    good = write_config(tmp_path, '[[scorers]]\nid = "x"\nkind = "completeness"\n')
    code, stderr = run_serve(good, "--check")
    assert code == 0, stderr
