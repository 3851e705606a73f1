"""The embedded broker survives a message file that a crashed or still-writing process left
empty or half-written: the file is set aside and the worker keeps consuming (kombu's own
filesystem transport stops the worker with a JSONDecodeError)."""

from __future__ import annotations

import os

import pytest
from kombu import Connection
from kombu.exceptions import ChannelError
from kombu.transport import virtual

from casework.broker import Channel, Transport


@pytest.fixture
def broker(tmp_path, monkeypatch):
    # kombu keeps declared bindings per process; each test has its own folders.
    monkeypatch.setattr(Transport, "global_state", virtual.BrokerState())
    folders = {name: tmp_path / name for name in ("queue", "processed", "control")}
    for folder in folders.values():
        folder.mkdir()
    options = {"data_folder_in": str(folders["queue"]), "data_folder_out": str(folders["queue"]),
               "processed_folder": str(folders["processed"]), "control_folder": str(folders["control"]),
               "store_processed": False}
    with Connection("filesystem://localhost//", transport_options=options) as connection:
        yield connection, folders


def test_celery_uses_this_transport_for_filesystem_urls(broker):
    connection, _ = broker
    assert isinstance(connection.default_channel, Channel)


def test_an_empty_or_garbled_message_is_set_aside_and_the_next_one_is_delivered(broker):
    connection, folders = broker
    queue = connection.SimpleQueue("runs")
    (folders["queue"] / "0_aaaa.runs.msg").write_bytes(b"")  # a writer killed after open()
    (folders["queue"] / "0_bbbb.runs.msg").write_bytes(b'{"body": "trunc')  # killed mid-write
    queue.put({"run": 7})

    message = queue.get(timeout=2)
    assert message.payload == {"run": 7}
    message.ack()
    assert sorted(os.listdir(folders["processed"] / "unreadable")) == ["0_aaaa.runs.msg", "0_bbbb.runs.msg"]
    assert os.listdir(folders["queue"]) == []
    queue.close()


def test_a_message_appears_in_the_queue_only_once_written_whole(broker, monkeypatch):
    connection, folders = broker
    queue = connection.SimpleQueue("runs")

    def crash(src, dst):  # the process dies between writing and publishing the file
        raise OSError("killed")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(ChannelError):
        queue.put({"run": 8}, retry=False)
    names = os.listdir(folders["queue"])
    assert names and all(name.startswith(".") and name.endswith(".partial") for name in names)
    monkeypatch.undo()
    queue.put({"run": 9})
    message = queue.get(timeout=2)
    assert message.payload == {"run": 9}  # the partial file was never taken for a message
    message.ack()
    queue.close()
