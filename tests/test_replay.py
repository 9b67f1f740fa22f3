"""The replay model: TTFT/decode split, re-timing on the recorded DAG, re-pricing, variants and config.

Expected values are worked out by hand from the fixture timestamps (see comments) or
recomputed with ``genai_prices.calc_price``; none is copied from a run.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
from genai_prices import Usage, calc_price

from agentsim.model.loading import ScenarioError
from agentsim.replay.config import ReplayConfig, ReplayVariantSpec, load_replay_config
from agentsim.replay.retime import parse_variant, replay, split_call, timeline
from agentsim.traces.session_files import read_sessions
from agentsim.traces.sessions import Call, Node, Session, link_nodes

FIX = Path(__file__).resolve().parent / "fixtures" / "sessions"


@pytest.fixture(scope="module")
def everything():
    return read_sessions([(FIX, "auto")])[0]


@pytest.fixture(scope="module")
def claude():
    return {s.id: s for s in read_sessions([(FIX / "claude-code", "auto")])[0]}


@pytest.fixture
def flat(tmp_path):
    """Every model pinned to TTFT 2 s, 60 output tokens/s, fast = 2.5x output speed (whatever is bundled)."""
    prof = tmp_path / "flat.yaml"
    prof.write_text(
        "profile: flat\nkind: assumption\nsource: test\ndate: 2026-11-01\nttft: 2.0\noutput_tps: 60\n"
        "speeds: {fast: {output_tps_x: 2.5}}\n"
    )
    return ReplayConfig.model_validate({"models": {"*": {"profile": str(prof)}}})


def rows(res, variant, session=None):
    c = res.calls[res.calls.variant == variant]
    return c if session is None else c[c.session == session]


def price(row, model, provider, context=None):
    u = Usage(
        input_tokens=int(row.input_tokens),
        cache_read_tokens=int(row.cache_read_tokens),
        cache_write_tokens=int(row.cache_write_tokens),
        cache_write_1h_tokens=int(row.cache_write_1h_tokens),
        output_tokens=int(row.output_tokens),
        output_reasoning_tokens=int(row.reasoning_tokens),
    )
    when = dt.datetime.fromtimestamp(row.start_s, dt.UTC)
    return float(
        calc_price(u, model, provider_id=provider, price_context=context, genai_request_timestamp=when).total_price
    )


# --------------------------------------------------------------------------- the split


def test_split_ttft_first_and_proportional():
    # slower than the profile expects: TTFT as expected, the rest is decode
    assert split_call(10.0, 2.0, 5.0) == (2.0, 8.0)
    # faster than expected (2 + 5 > 3.5): split in proportion 2:5
    assert split_call(3.5, 2.0, 5.0) == pytest.approx((1.0, 2.5))
    assert split_call(10.0, 2.0, 5.0, method="proportional") == pytest.approx((10 * 2 / 7, 10 * 5 / 7))
    assert split_call(4.0, 2.0, 1.0, recorded_ttft=1.2) == pytest.approx((1.2, 2.8))
    assert split_call(1.0, 2.0, 1.0, recorded_ttft=3.0) == (1.0, 0.0)  # a TTFT longer than the call is capped
    assert split_call(0.0, 2.0, 1.0) == (0.0, 0.0)


# --------------------------------------------------------------------------- identity and fast mode


def test_identity_replay_reproduces_wall_time_and_cost(everything):
    res = replay(everything, {"identity": ReplayVariantSpec()})
    st = res.session_table
    rec, same = st[st.variant == "recorded"].set_index("session"), st[st.variant == "identity"].set_index("session")
    for sid in rec.index:
        assert abs(same.wall_time_s[sid] - rec.wall_time_s[sid]) <= 0.02 * rec.wall_time_s[sid]
        assert same.wall_time_s[sid] == pytest.approx(rec.wall_time_s[sid], abs=1e-6)  # in fact exact
        assert same.cost_usd[sid] == rec.cost_usd[sid]
    # the critical-path split adds up to the wall time
    parts = same[["model_s", "tool_s", "human_s", "other_s"]].sum(axis=1)
    assert (parts - same.wall_time_s).abs().max() < 1e-6


def test_fast_decode_is_recorded_decode_over_2_5_with_constant_ttft(claude, flat):
    # sess-bbb: C1 09:00:00 -> :12 (300 out), Edit 1 s, C2 :13 -> :21 (240 out). Profile: TTFT 2 s,
    # 60 tok/s, so both calls are slower than expected and their TTFT is the constant 2 s.
    res = replay([claude["sess-bbb"]], {"fast": ReplayVariantSpec(speed="fast")}, flat)
    rec, fast = rows(res, "recorded"), rows(res, "fast")
    assert list(rec.ttft_s) == [2.0, 2.0] and list(fast.ttft_s) == [2.0, 2.0]
    assert list(rec.decode_s) == [10.0, 6.0]  # 12 - 2, 8 - 2
    assert list(fast.decode_s) == [10.0 / 2.5, 6.0 / 2.5]
    st = res.session_table.set_index("variant")
    assert st.wall_time_s["fast"] == pytest.approx(2 + 4 + 1 + 2 + 2.4)  # 11.4 s instead of 21 s
    summary = res.summary()
    assert list(summary.index) == ["recorded", "fast"] and summary.delta_time_s["fast"] == pytest.approx(11.4 - 21)
    assert summary.usd_per_hour_saved["fast"] == pytest.approx(summary.delta_cost_usd["fast"] / (9.6 / 3600))
    assert st.decode_s["fast"] == pytest.approx(6.4) and st.tool_s["fast"] == pytest.approx(1.0)


def test_fast_on_a_session_with_subagent_and_parallel_tools(claude, flat):
    # sess-aaa, 374 s recorded. Fast divides each opus decode by 2.5: A1 6 s (decode 4) -> -2.4; A2 5 s
    # (decode 3) -> -1.8; A3 was already fast; A4 6 s (decode 4) -> -2.4; A5 4 s (decode 2) -> -1.2.
    # Haiku has no fast tier: the subagent's calls, hence the Task tool, keep their time.
    res = replay([claude["sess-aaa"]], {"fast": ReplayVariantSpec(speed="fast")}, flat)
    st = res.session_table.set_index("variant")
    assert st.wall_time_s["recorded"] == pytest.approx(374.0)
    assert st.wall_time_s["fast"] == pytest.approx(374.0 - 2.4 - 1.8 - 2.4 - 1.2)
    assert st.human_s["fast"] == pytest.approx(183.0)  # 09:01:57 -> 09:05:00, unchanged
    assert any("claude-haiku-4-5 has no fast tier" in n for n in res.notes)
    fast = rows(res, "fast")
    assert set(fast[fast.model.str.startswith("claude-haiku")].target_tier) == {"standard"}


def test_repricing_matches_calc_price_per_call(everything):
    res = replay(
        everything,
        {"fast": ReplayVariantSpec(speed="fast"), "sonnet": ReplayVariantSpec(model="anthropic/claude-sonnet-4-5")},
    )
    checked = 0
    for row in rows(res, "fast").itertuples():
        model = row.target_model
        provider = "openai" if model.startswith("gpt") else "anthropic"
        ctx = None
        if row.target_tier == "fast":
            ctx = {"speed": "fast"} if provider == "anthropic" else {"service_tier": "fast"}
        elif row.target_tier != "standard":
            ctx = {"service_tier": row.target_tier}
        assert row.cost_usd == pytest.approx(price(row, model, provider, ctx), rel=1e-12), row.call_id
        checked += row.target_tier == "fast"
    # fast tiers exist for claude-opus-4-8 (A1-A5, C1, C2) and gpt-5.3-codex (7 Codex calls, 2 OTel spans);
    # not for claude-haiku-4-5 (B1, B2) nor claude-sonnet-4-5 (D1, 3 OTel spans)
    assert checked == 7 + 7 + 2
    for row in rows(res, "sonnet").itertuples():
        assert row.cost_usd == pytest.approx(price(row, "claude-sonnet-4-5", "anthropic"), rel=1e-12)
    for row in rows(res, "recorded").itertuples():  # the recorded model and tier
        provider = "openai" if row.model.startswith("gpt") else "anthropic"
        ctx = (
            None
            if row.tier == "standard"
            else ({"speed": "fast"} if provider == "anthropic" else {"service_tier": row.tier})
        )
        assert row.cost_usd == pytest.approx(price(row, row.model, provider, ctx), rel=1e-12)


def test_timeline_parallel_branches_and_containers():
    # call a (0-4) asks for tools b (4-6) and c (4-10); c holds a subagent call x (5-9); call d waits for b and c.
    x = Node("x", "call", 5, 9, parent="c", call=Call("x", "m", None, output_tokens=100))
    nodes = [
        Node("a", "call", 0, 4, call=Call("a", "m", None)),
        Node("b", "tool", 4, 6),
        Node("c", "tool", 4, 10),
        x,
        Node("d", "call", 10, 12, call=Call("d", "m", None)),
    ]
    link_nodes(nodes)
    s = Session("s", "test", "-", nodes=nodes)
    same = timeline(s, {"a": (1.0, 3.0), "x": (1.0, 3.0), "d": (1.0, 1.0)})
    assert same.wall_time_s == 12.0 and same.end["c"] == 10.0
    # halve the subagent call: c = 1 s lead + 2 s + 1 s tail = 4 s, ends at 8; d starts at 8
    fast = timeline(s, {"a": (1.0, 3.0), "x": (1.0, 1.0), "d": (1.0, 1.0)})
    assert (fast.end["x"], fast.end["c"], fast.start["d"], fast.wall_time_s) == (7.0, 8.0, 8.0, 10.0)
    assert fast.time_s["model"] == pytest.approx(4 + 2 + 2) and fast.time_s["other"] == pytest.approx(2.0)
    # make the subagent slow: b no longer matters, c does
    slow = timeline(s, {"a": (1.0, 3.0), "x": (1.0, 9.0), "d": (1.0, 1.0)})
    assert slow.wall_time_s == 18.0


# --------------------------------------------------------------------------- profiles, config, variants


def test_speed_profile_changes_the_split_and_the_fast_tier(claude, tmp_path):
    prof = tmp_path / "opus.yaml"
    prof.write_text(
        "profile: opus-measured\nkind: measured\nsource: our bench\ndate: 2026-11-01\n"
        "ttft: 1.0\noutput_tps: 100\nspeeds: {fast: {output_tps_x: 2.0}}\n"
    )
    cfg = ReplayConfig.model_validate({"models": {"claude-opus-4-8": {"profile": str(prof)}}})
    res = replay([claude["sess-bbb"]], {"fast": ReplayVariantSpec(speed="fast")}, cfg)
    rec, fast = rows(res, "recorded"), rows(res, "fast")
    assert list(rec.ttft_s) == [1.0, 1.0] and list(rec.decode_s) == [11.0, 7.0]
    assert list(fast.decode_s) == [5.5, 3.5]  # the profile's fast tier doubles the output speed
    assert res.assumptions["models"]["claude-opus-4-8"]["profile"] == "opus-measured"


def test_model_swap_retimes_with_both_profiles(claude, tmp_path):
    for name, ttft, tps in (("opus", 2.0, 50), ("sonnet", 1.0, 100)):
        (tmp_path / f"{name}.yaml").write_text(
            f"profile: {name}\nkind: assumption\nsource: test\ndate: 2026-11-01\nttft: {ttft}\noutput_tps: {tps}\n"
        )
    cfg = ReplayConfig.model_validate(
        {
            "models": {
                "claude-opus-4-8": {"profile": str(tmp_path / "opus.yaml")},
                "anthropic/claude-sonnet-4-5": {"profile": str(tmp_path / "sonnet.yaml")},
            }
        }
    )
    res = replay([claude["sess-bbb"]], {"s": ReplayVariantSpec(model="anthropic/claude-sonnet-4-5")}, cfg)
    rec, swap = rows(res, "recorded"), rows(res, "s")
    # TTFT scales 2 -> 1, decode by 50/100
    assert list(swap.ttft_s) == [1.0, 1.0]
    assert list(swap.decode_s) == [d / 2 for d in rec.decode_s]


def test_config_file_variants_tiers_and_prices(claude, tmp_path, flat):
    cfg_file = tmp_path / "replay.yaml"
    cfg_file.write_text(
        "prices_as_of: 2026-11-15\n"
        "value_of_time: {usd_per_hour: 50}\n"
        "models:\n"
        "  '*': {profile: flat.yaml}\n"
        "  claude-opus-4-8:\n"
        "    speeds: {turbo: {output_tps_x: 4, price_x: 3}}\n"
        "variants:\n"
        "  turbo-opus: {speed: {claude-opus-4-8: turbo}}\n"
        "  cheap: {price: {claude-opus-4-8: {input_mtok: 1, output_mtok: 2}}}\n"
    )
    cfg = load_replay_config(cfg_file)
    variants = dict(parse_variant(v, cfg) for v in cfg.variants)
    res = replay([claude["sess-bbb"]], variants, cfg)
    rec, turbo, cheap = rows(res, "recorded"), rows(res, "turbo-opus"), rows(res, "cheap")
    assert list(turbo.decode_s) == [10.0 / 4, 6.0 / 4]
    assert list(turbo.cost_usd) == pytest.approx([3 * c for c in rec.cost_usd], rel=1e-12)
    for row in cheap.itertuples():  # 1 $/Mtok for all input kinds (no cache rates given), 2 $/Mtok output
        assert row.cost_usd == pytest.approx((row.input_tokens * 1 + row.output_tokens * 2) / 1e6, rel=1e-12)
    assert res.value_of_time == 50 and res.assumptions["prices"] == "as of 2026-11-15"


def test_bad_config_points_at_the_line(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("variants:\n  fast: {sped: fast}\n")
    with pytest.raises(ScenarioError) as e:
        load_replay_config(bad)
    assert f"{bad}:2:" in str(e.value) and "did you mean 'speed'" in str(e.value)


def test_parse_variant():
    assert parse_variant("fast") == ("fast", ReplayVariantSpec(speed="fast"))
    assert parse_variant("identity")[1] == ReplayVariantSpec()
    _, spec = parse_variant("model=anthropic/claude-sonnet-4-5,speed=fast")
    assert spec == ReplayVariantSpec(model="anthropic/claude-sonnet-4-5", speed="fast")
    for bad in ("fats", "speed=", "colour=red", "speed=fast,speed=standard"):
        with pytest.raises(ValueError):
            parse_variant(bad)


def test_explicit_tier_a_model_lacks_is_an_error(claude):
    with pytest.raises(ValueError, match="no fast tier"):
        replay([claude["sess-aaa"]], {"x": ReplayVariantSpec(speed={"claude-haiku-4-5": "fast"})})
    with pytest.raises(ValueError, match="not in the genai-prices catalog"):
        replay([claude["sess-bbb"]], {"x": ReplayVariantSpec(model="anthropic/claude-no-such-model")})


def test_unpriced_model_is_reported_not_hidden(tmp_path):
    n = Node(
        "c1",
        "call",
        0.0 + 1.79e9,
        5.0 + 1.79e9,
        call=Call("c1", "my-local-llama", "selfhosted", input_tokens=100, output_tokens=10),
    )
    link_nodes([n])
    res = replay([Session("s", "test", "-", nodes=[n])], {})
    assert res.totals("recorded")["unpriced_calls"] == 1
    assert any("not priced" in note for note in res.notes)
