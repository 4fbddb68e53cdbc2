"""SIGINT and SIGTERM, taken the same way from the first line of the ``harness`` command on.

Both end the command as Ctrl-C does: ``KeyboardInterrupt`` in the main program, so every command's
interrupt path runs (finished levels kept, an engine it started stopped, nothing written half) and
the exit status is 130. Under gevent (``harness sweep``) the interrupt is never raised where the
signal happens to land (a Locust greenlet, the event loop, a weakref callback: a traceback and a
lost signal); it is thrown into the main greenlet at its next wait, once. A signal is also
*remembered* (``received``): ``raise_if_received`` is checked before each level starts, and the
command's exit status is 130 whatever it returned, so no signal is lost. Standard library only:
it is installed before anything heavy is imported.

Two moments take a signal differently. During start-up (``install(command)`` until ``started``)
nothing has been written and nothing started, and an interrupt raised inside an import can leave
gevent's patching half done (seen: an exit that hung for minutes): the process writes its one line
and ends at once with 130. Later, a signal that lands inside the import machinery itself (a lazy
import of Locust, say; its lock callbacks swallow an exception with a printed traceback) is raised
a moment afterwards, once the import's own frames are left.
"""

from __future__ import annotations

import os
import signal
import sys
import threading

RECEIVED: list[int] = []  # every SIGINT/SIGTERM this process took, in order
_THROWN: list[bool] = []  # the main greenlet was interrupted once already


_STARTING: list[str] = []  # the command's name while it starts up
_RETRY_S = 0.02  # how soon an interrupt that landed in the import machinery is tried again


def _take(signum, frame) -> None:
    if _STARTING:
        os.write(2, f"harness {_STARTING[0]}: interrupted\n".replace("  ", " ").encode())
        os._exit(130)
    RECEIVED.append(signum)
    hub = _gevent_hub()
    if hub is None:
        _raise_outside_imports(frame)
        return
    if _DEFER:  # a level is running: its main greenlet raises it at its next wait
        return
    if not _THROWN:  # a second signal must not cut the first one's clean-up short
        _THROWN.append(True)
        hub.loop.run_callback(_interrupt_main, hub)


def _in_import_machinery(frame) -> bool:
    return frame is not None and frame.f_code.co_filename.startswith("<frozen importlib")


def _raise_outside_imports(frame) -> None:
    """KeyboardInterrupt here, unless this frame is the import machinery's own: then again shortly."""
    if not _in_import_machinery(frame):
        raise KeyboardInterrupt
    signal.signal(signal.SIGALRM, lambda _signum, later: _raise_outside_imports(later))
    signal.setitimer(signal.ITIMER_REAL, _RETRY_S)


def _gevent_hub():
    """The gevent hub when gevent has patched this process, else None."""
    patched = getattr(sys.modules.get("gevent.monkey"), "is_module_patched", None)  # None mid-import
    if patched is None or not patched("threading"):
        return None
    import gevent

    return gevent.get_hub()


def _interrupt_main(hub) -> None:
    main = hub.parent
    if not _FINISHED and main is not None and not main.dead:
        main.throw(KeyboardInterrupt)


_FINISHED: list[bool] = []
_DEFER: list[bool] = []


def defer(on: bool) -> None:
    """While on, a signal is only recorded: the code that set it checks ``raise_if_received`` at
    its own waits (the load runner, between the waits of a level)."""
    _DEFER.clear()
    if on:
        _DEFER.append(True)


def finished() -> None:
    """The command has ended: an interrupt still pending is not thrown any more (it would land in
    the interpreter's shutdown)."""
    _FINISHED.append(True)


def note(signum: int) -> None:
    """Remember a signal taken by another handler (the load's own, under gevent)."""
    RECEIVED.append(signum)


def install(starting: str | None = None) -> None:
    """Take SIGINT and SIGTERM where they still have their default action (a SIGINT ignored by a
    parent, as for a background job, stays ignored), on the main thread only. With ``starting``
    (the command's name), a signal ends the process at once until ``started`` is called."""
    if threading.current_thread() is not threading.main_thread():
        return
    if starting is not None:
        _STARTING[:] = [starting]
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, _take)
    if signal.getsignal(signal.SIGTERM) == signal.SIG_DFL:
        signal.signal(signal.SIGTERM, _take)


def started() -> None:
    """Start-up is over: from here on a signal is the command's interrupt (``KeyboardInterrupt``)."""
    _STARTING.clear()


def received() -> bool:
    return bool(RECEIVED)


def raise_if_received() -> None:
    """KeyboardInterrupt when a signal came and has not ended the command yet."""
    if RECEIVED:
        raise KeyboardInterrupt


def reader_gone() -> int:
    """The reader of our output left (``harness summarise ... | head``): end quietly, as a command
    killed by SIGPIPE would (status 141), without a traceback when Python flushes stdout at exit."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    return 141
