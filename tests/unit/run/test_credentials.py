"""The benchmark never sees credentials (R14): stripped by name, with an allowlist."""

from __future__ import annotations

from perfgate.run.execution import benchmark_environment, is_credential

CI_ENVIRONMENT = {
    "PATH": "/usr/bin",
    "HOME": "/home/runner",
    "GITHUB_SHA": "abc",
    "GITHUB_REPOSITORY": "acme/sim",
    "RUNNER_NAME": "gpu-1",
    "TOKENIZERS_PARALLELISM": "false",
    # Credentials a runner may hold, however they are spelled.
    "GITHUB_TOKEN": "ghs_1",
    "GH_TOKEN": "ghs_2",
    "GH_ENTERPRISE_TOKEN": "ghe_1",
    "GITHUB_ENTERPRISE_TOKEN": "ghe_2",
    "INPUT_GITHUB-TOKEN": "ghs_3",
    "INPUT_TOKEN": "ghs_4",
    "ACTIONS_RUNTIME_TOKEN": "rt",
    "ACTIONS_ID_TOKEN_REQUEST_URL": "https://token.example",
    "ACTIONS_CACHE_URL": "https://cache.example",
    "AWS_SECRET_ACCESS_KEY": "aws",
    "NGC_API_KEY": "ngc",
    "DATABASE_PASSWORD": "pw",
    "npm_config__authToken": "npm",
    "GIT_CONFIG_COUNT": "1",
    "GIT_CONFIG_KEY_0": "http.extraheader",
    "GIT_CONFIG_VALUE_0": "AUTHORIZATION: basic secret",
    "GIT_CONFIG_PARAMETERS": "'http.extraheader'='AUTHORIZATION: basic secret'",
    "GIT_ASKPASS": "/tmp/askpass",
    "SSH_AUTH_SOCK": "/tmp/agent.sock",
}
KEPT = {"PATH", "HOME", "GITHUB_SHA", "GITHUB_REPOSITORY", "RUNNER_NAME", "TOKENIZERS_PARALLELISM"}


def test_every_credential_is_stripped_and_nothing_else() -> None:
    assert set(benchmark_environment(CI_ENVIRONMENT)) == KEPT


def test_the_config_allowlist_keeps_a_named_variable() -> None:
    kept = benchmark_environment(CI_ENVIRONMENT, keep=("NGC_API_KEY",))
    assert set(kept) == KEPT - {"TOKENIZERS_PARALLELISM"} | {"NGC_API_KEY"}


def test_names_are_matched_whatever_their_case() -> None:
    assert is_credential("my_secret_value") and is_credential("Hf_Token")
    assert not is_credential("CUDA_VISIBLE_DEVICES")
