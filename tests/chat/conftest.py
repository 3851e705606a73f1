from tests.chat.fixtures import worker_thread  # noqa: F401 - fixture
from tests.fakes.fixtures import *  # noqa: F403 - fake_openai, fake_anthropic
