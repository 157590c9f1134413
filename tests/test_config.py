import pytest

from architectures.core.config import ConfigError, DQNConfig, describe

BAD_VALUES = [
    # (key, value, words the message must contain)
    ("total_env_steps", 0, ">= 1"),
    ("total_env_steps", -5, ">= 1"),
    ("buffer_size", 0, ">= 1"),
    ("batch_size", -1, ">= 1"),
    ("n_step", 0, ">= 1"),
    ("target_update_period", 0, ">= 1"),
    ("eval_every", 0, ">= 1"),
    ("num_workers", 0, ">= 1"),
    ("torch_threads", 0, ">= 1"),
    ("hidden_sizes", (0, 4), "integers >= 1"),
    ("hidden_sizes", (), "non-empty"),
    ("utd", 0.0, "> 0"),
    ("utd", -0.25, "> 0"),
    ("lr", 0.0, "> 0"),
    ("eps_start", 1.5, "[0, 1]"),
    ("eps_end", -0.1, "[0, 1]"),
    ("eval_epsilon", 2.0, "[0, 1]"),
    ("gamma", 1.01, "[0, 1]"),
    ("target_tau", 0.0, "(0, 1]"),
    ("max_grad_norm", -1.0, ">= 0"),
    ("env_step_cost_us", -1.0, ">= 0"),
    ("loss", "l1", "huber"),
    ("learning_starts", 10**9, "<= total_env_steps"),
    ("device", "tpu", "cpu"),
    ("weight_sync_period", 0, ">= 1"),
    ("optimizer_state", "global", "'shared', 'per_worker'"),
    ("reset_period", -1, ">= 0"),
    ("reset_layers", "first", "'last', 'all'"),
    ("utd_slack_steps", -1, ">= 0"),
    ("actor_epsilons", "greedy", "'schedule', 'apex'"),
    ("worker_timeout_s", 0.0, "> 0"),
    ("priority_alpha", 1.5, "[0, 1]"),
    ("priority_beta", -0.1, "[0, 1]"),
    # upper bounds (config.UPPER_BOUNDS; the machine's own are tests/test_config_limits.py's)
    ("seed", 2**32, "<= 4,294,967,295 (Sacred seeds numpy"),
    ("utd", 1e6, "<= 256"),
    ("n_step", 1_001, "<= 1,000"),
    ("eval_episodes", 1_001, "<= 1,000"),
    ("env_step_cost_us", 1e7, "<= 1,000,000"),
    ("slow_worker_cost_us", 1e7, "<= 1,000,000"),
    ("batch_size", 50_001, "<= buffer_size (50,000)"),
    ("device", "cuda0", "'cpu' or 'cuda[:N]'"),
]


@pytest.mark.parametrize("key,value,words", BAD_VALUES)
def test_bad_value_names_key_and_range(key, value, words):
    with pytest.raises(ConfigError) as err:
        DQNConfig(**{key: value})
    message = str(err.value)
    assert message.startswith(f"{key}:"), message
    assert words in message
    assert "\n" not in message


@pytest.mark.parametrize("values,field,expected", [
    ({"total_env_steps": 5e4}, "total_env_steps", 50_000),      # Sacred/CLI give floats for 5e4
    ({"hidden_sizes": [64, 32]}, "hidden_sizes", (64, 32)),     # lists from JSON become tuples
    ({"hidden_sizes": 64}, "hidden_sizes", (64,)),
    ({"utd": 1}, "utd", 1.0),
])
def test_from_dict_coerces_loose_types(values, field, expected):
    assert getattr(DQNConfig.from_dict(values), field) == expected


@pytest.mark.parametrize("values,words", [
    ({"total_env_steps": 1.5}, "integer"),
    ({"double_dqn": 1}, "true or false"),
    ({"no_such_key": 1}, "unknown config key"),
    ({"lr": "fast"}, "number"),
])
def test_from_dict_rejects_wrong_types(values, words):
    with pytest.raises(ConfigError, match=words):
        DQNConfig.from_dict(values)


def test_every_field_is_documented():
    docs = describe()
    names = list(DQNConfig.__dataclass_fields__)
    assert sorted(docs) == sorted(names)
    assert all(len(doc) > 10 for doc in docs.values())


def test_minatar_ids_are_registered_on_demand():
    from architectures import preflight

    with pytest.warns(RuntimeWarning, match="registered without an episode cap"):  # said once, as to a user
        preflight("single_env", DQNConfig(env_id="MinAtar/Breakout-v1"))  # registers MinAtar's ids, then makes one


@pytest.mark.parametrize("env_id", ["NoSuchEnv-v0", "MinAtar/NoSuchGame-v1"])
def test_an_unknown_env_id_is_refused_by_the_preflight_in_one_line(env_id):
    """A config is pure data: building one looks at no env (a user's module is imported once, by the
    preflight every front door calls, not at every replace())."""
    from architectures import preflight

    cfg = DQNConfig(env_id=env_id)  # no env is looked at here
    with pytest.raises(ConfigError) as err:
        preflight("single_env", cfg)
    assert str(err.value).startswith("env_id:") and "unknown gymnasium id" in str(err.value)
    assert "\n" not in str(err.value)


def test_building_a_config_imports_nothing_of_the_users_env(tmp_path, monkeypatch):
    (tmp_path / "env_never_imported.py").write_text("raise RuntimeError('imported')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    cfg = DQNConfig(env_id="env_never_imported:Any-v0").replace(seed=2)
    assert DQNConfig.from_dict(cfg.to_dict()) == cfg
    import sys

    assert "env_never_imported" not in sys.modules


def test_literal_keys_are_typed_once_and_checked_from_their_annotation():
    """The enum-like keys say their values in their annotation: the check, the message and the CLI's
    choices all read it (no list of values written twice)."""
    from architectures.core.config import choices

    assert choices("backend") == ("local", "ray", "inprocess") and choices("batch_size") is None
    for key in ("loss", "actor_epsilons", "actor_quotas", "reset_layers", "optimizer_state", "hogwild_replay",
                "backend"):
        with pytest.raises(ConfigError, match=f"^{key}: must be one of " + ", ".join(repr(v) for v in choices(key))):
            DQNConfig(**{key: "no_such_value"})


def test_round_trip_through_dict():
    cfg = DQNConfig(hidden_sizes=(8,), utd=2.0)
    assert DQNConfig.from_dict(cfg.to_dict()) == cfg


def test_the_docs_document_every_config_key():
    import os

    with open(os.path.join(os.path.dirname(os.path.dirname(__file__)), "docs", "configuration.md")) as f:
        readme = f.read()
    assert [key for key in describe() if f"| `{key}` |" not in readme] == []
