"""The embedded broker: kombu's filesystem transport, made safe against a crash mid-message.

kombu writes a message straight into the queue folder (open, then write) and reads any file
there without waiting for its writer. A reader that polls between the two gets an empty file;
a process killed between them leaves one for good. Either way `json.loads` fails inside the
consumer loop and the worker stops ("Unrecoverable error: JSONDecodeError"), and so does every
worker started after it: found by the kill test in bench/runtime_throughput.py.

Here a message is written under a temporary name that no reader matches, then renamed into
place (atomic on one filesystem), and a file that still cannot be read is moved aside to
`<processed_folder>/unreadable/` with an error in the log instead of stopping the worker.
A run whose wake-up was lost that way is re-sent by the sweeper (agents.tasks.resume_stale_runs).

casework/celery.py points kombu's "filesystem" alias here, so CELERY_BROKER_URL stays
`filesystem://`.
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
import uuid
from queue import Empty
from time import monotonic

from kombu.exceptions import ChannelError
from kombu.transport import filesystem
from kombu.utils.encoding import bytes_to_str, str_to_bytes
from kombu.utils.json import dumps, loads

logger = logging.getLogger(__name__)


class Channel(filesystem.Channel):
    def _put(self, queue, payload, **kwargs):
        name = f"{int(round(monotonic() * 1000))}_{uuid.uuid4()}.{queue}.msg"
        final = os.path.join(self.data_folder_out, name)
        # A leading dot: `_get` matches on the text after the first dot, which is then not
        # "<queue>.msg", so a half-written file is never picked up.
        partial = os.path.join(self.data_folder_out, f".{name}.partial")
        try:
            with open(partial, "wb", buffering=0) as f:
                f.write(str_to_bytes(dumps(payload)))
            os.replace(partial, final)
        except OSError as exc:
            raise ChannelError(f"Cannot add file {final!r} to directory") from exc

    def _get(self, queue):
        wanted = f"{queue}.msg"
        for name in sorted(os.listdir(self.data_folder_in)):
            if name.partition(".")[2] != wanted:
                continue
            # Into the processed folder even when not keeping it: on the queue's filesystem, so
            # the move is a rename and two consumers cannot both take the file.
            folder = self.processed_folder or tempfile.gettempdir()
            taken = os.path.join(folder, name)
            try:
                shutil.move(os.path.join(self.data_folder_in, name), folder)
            except OSError:
                continue  # another consumer took it first
            try:
                with open(taken, "rb") as f:
                    payload = f.read()
                message = loads(bytes_to_str(payload))
            except (OSError, ValueError) as exc:
                self._set_aside(taken, exc)
                continue
            if not self.store_processed:
                os.remove(taken)
            return message
        raise Empty()

    def _set_aside(self, path: str, exc: Exception) -> None:
        aside = os.path.join(self.processed_folder or tempfile.gettempdir(), "unreadable")
        try:
            os.makedirs(aside, exist_ok=True)
            shutil.move(path, aside)
        except OSError:
            aside = "nowhere (could not be moved)"
        logger.error("Broker message %s could not be read (%s); set aside in %s. The sweeper re-sends "
                     "any run it was meant to wake.", os.path.basename(path), exc, aside)


class Transport(filesystem.Transport):
    Channel = Channel
