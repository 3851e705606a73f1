from tests.fakes.fixtures import *  # noqa: F403 - fake_openai, fake_anthropic
