"""In-process runs that die leave nothing held; a wait for a pool slot is said, bounded and interruptible.

``sms-pipeline materialize`` runs the jobs in its own process, so no run
launcher watches those runs and Dagster's run monitoring cannot check them: a
process killed mid-run (``kill -9``, the OOM killer, a container restart)
leaves its run STARTED with its pool slot, and every later run that needs the
pool waits for ever. Dagster's own wait inside a run logs only at DEBUG, spins
without sleeping, and swallows SIGTERM and SIGINT. So:

* every in-process run records its process in its tags (:class:`ProcessIdentity`:
  host, pid, and the process's start: boot id, pid namespace, start time), so
  a later process on the same host can tell that the run's process is gone,
  or that its pid now belongs to another process;
* :func:`reap` marks such runs failed (canceled if they were being canceled),
  frees their pool slots and their places in the pools' queues (a freed slot
  is otherwise handed to the next queued step, which may be a dead run's), and
  frees the slots of runs that ended, or were deleted, but still hold some;
* :class:`RunGuard` waits for the pools before each run, naming the run that
  holds them, for at most ``SMS_PIPELINE_POOL_WAIT_S``; watches each run while
  it executes (a wait for a slot inside the run gets the same treatment); and
  makes SIGTERM and SIGINT end the command within seconds, the run marked
  canceled and its slots freed.

Runs launched by the daemon or the webserver belong to the run launcher and
to run monitoring (``dagster.yaml.template``); :func:`reap` only frees the
slots those runs keep after they ended, and never judges their processes.
"""

from __future__ import annotations

import logging
import select
import signal
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from types import FrameType
from typing import TypeVar

import dagster as dg

from sms_pipeline.errors import UserError
from sms_pipeline.orchestration.processes import HOST_TAG, ProcessIdentity, process_gone
from sms_pipeline.orchestration.schedules import PARTITION_RANGE_END_TAG, PARTITION_RANGE_START_TAG

log = logging.getLogger(__name__)

UNFINISHED = frozenset({
    dg.DagsterRunStatus.NOT_STARTED, dg.DagsterRunStatus.QUEUED, dg.DagsterRunStatus.STARTING,
    dg.DagsterRunStatus.STARTED, dg.DagsterRunStatus.CANCELING,
})
# A run that ended but still holds a slot is freed after this long (unless its
# process is known to be gone): what run monitoring's
# free_slots_after_run_end_seconds does, when the instance does not set it.
ENDED_RUN_GRACE_S = 60
POLL_S = 1.0
# After SIGTERM/SIGINT, a run that is not waiting for a slot gets this long to
# stop by itself (Dagster interrupts the step at once; dagster-dbt forwards the
# interrupt to dbt and waits for it up to DAGSTER_DBT_TERMINATION_TIMEOUT_SECONDS,
# 25 s) before the guard interrupts the process's main thread. A second signal
# interrupts it at once.
STOP_GRACE_S = 30.0
FORCE_SIGNAL = signal.SIGUSR1
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)

T = TypeVar("T")


# ---------------------------------------------------------------------------
# Freeing what dead or ended runs hold


def describe_run(run: dg.DagsterRun | None) -> str:
    """Job, partition range and process of a run, for a line a person reads."""
    if run is None:
        return "no longer in the instance"
    parts = [run.job_name]
    first, last = run.tags.get(PARTITION_RANGE_START_TAG), run.tags.get(PARTITION_RANGE_END_TAG)
    if first and last:
        parts.append(f"{first}..{last}")
    identity = ProcessIdentity.from_tags(run.tags)
    if identity is not None:
        parts.append(str(identity))
    return ", ".join(parts)


def _supports_pools(instance: dg.DagsterInstance) -> bool:
    return bool(instance.event_log_storage.supports_global_concurrency_limits)


def _pooled_run_ids(instance: dg.DagsterInstance, pools: Iterable[str] | None = None) -> set[str]:
    """Runs with a slot or a place in the queue of ``pools`` (every pool when None)."""
    if not _supports_pools(instance):
        return set()
    storage = instance.event_log_storage
    keys = sorted(storage.get_concurrency_keys() if pools is None else set(pools))
    found = set()
    for info in storage.get_concurrency_infos(keys).values():
        found.update(slot.run_id for slot in info.claimed_slots)
        found.update(step.run_id for step in info.pending_steps)
    if pools is None:
        found.update(storage.get_concurrency_run_ids())
    return found


def _ended_grace_s(instance: dg.DagsterInstance) -> float:
    configured = (instance.run_monitoring_settings or {}).get("free_slots_after_run_end_seconds")
    return float(configured) if configured else ENDED_RUN_GRACE_S


def reap(instance: dg.DagsterInstance, me: ProcessIdentity, run_ids: Iterable[str] | None = None) -> list[str]:
    """Mark the runs whose process is gone failed and free what they hold; free the slots of ended runs.

    ``run_ids``: the runs to look at; None looks at every unfinished run
    recorded by a process on this host and every run holding a slot or a place
    in a pool's queue. Returns one line per run acted on.
    """
    pooled = _pooled_run_ids(instance)
    if run_ids is None:
        ours = instance.get_runs(filters=dg.RunsFilter(statuses=sorted(UNFINISHED, key=str),
                                                      tags={HOST_TAG: me.host}))
        candidates = {run.run_id for run in ours} | pooled
    else:
        candidates = set(run_ids)
    if not candidates:
        return []
    records = {record.dagster_run.run_id: record
               for record in instance.get_run_records(filters=dg.RunsFilter(run_ids=sorted(candidates)))}
    grace = _ended_grace_s(instance)
    done = []
    for run_id in sorted(candidates):
        record = records.get(run_id)
        if record is None:
            if run_id in pooled:
                _free(instance, run_id)
                done.append(f"freed the pool slots of run {run_id}, which is no longer in the instance")
            continue
        run = record.dagster_run
        identity = ProcessIdentity.from_tags(run.tags)
        gone = process_gone(identity, me) if identity is not None else None
        if run.status in UNFINISHED:
            if not gone:
                continue
            canceling = run.status == dg.DagsterRunStatus.CANCELING
            marked = "canceled" if canceling else "failed"
            message = f"The process of this run ({identity}) is gone; marked {marked} by sms-pipeline ({me})."
            if canceling:
                instance.report_run_canceled(run, message)
            else:
                instance.report_run_failed(run, message)
            _free(instance, run_id)
            done.append(f"run {run_id} ({describe_run(run)}) was {run.status.value} but its process is gone: "
                        f"marked {marked}, its pool slots freed")
        elif run_id in pooled:
            ended = record.end_time or record.update_timestamp.timestamp()
            if gone or time.time() - ended >= grace:
                _free(instance, run_id)
                done.append(f"freed the pool slots run {run_id} ({describe_run(run)}) still held after it ended "
                            f"({run.status.value})")
    return done


def _free(instance: dg.DagsterInstance, run_id: str) -> None:
    if _supports_pools(instance):
        instance.event_log_storage.free_concurrency_slots_for_run(run_id)


# ---------------------------------------------------------------------------
# Who holds a pool


@dataclass(frozen=True)
class PoolState:
    pool: str
    full: bool  # no slot is free
    holders: tuple[str, ...]  # other runs given a slot (running a step, or about to)
    queued: tuple[str, ...]  # other runs waiting in the pool's queue
    waiting: bool  # the run asked about has a step in the queue that has not been given a slot


def pool_states(instance: dg.DagsterInstance, pools: Iterable[str], run_id: str | None = None) -> list[PoolState]:
    """The state of each pool, seen from ``run_id`` (None: from a run about to start)."""
    if not _supports_pools(instance):
        return []
    storage = instance.event_log_storage
    states = []
    for pool, info in sorted(storage.get_concurrency_infos(sorted(set(pools))).items()):
        assigned = [step for step in info.pending_steps if step.assigned_timestamp is not None]
        if info.slot_count:
            capacity: int | None = info.slot_count
        else:  # not used yet: Dagster sets the limit on the first claim
            capacity = info.limit
        holders = _unique(step.run_id for step in assigned if step.run_id != run_id)
        holders += tuple(r for r in _unique(slot.run_id for slot in info.claimed_slots)
                         if r != run_id and r not in holders)
        queued = _unique(step.run_id for step in sorted(info.pending_steps, key=lambda s: s.enqueued_timestamp)
                         if step.assigned_timestamp is None and step.run_id != run_id and step.run_id not in holders)
        waiting = run_id is not None and any(
            step.run_id == run_id and step.assigned_timestamp is None for step in info.pending_steps)
        full = capacity is not None and len(assigned) >= capacity
        states.append(PoolState(pool, full, holders, queued, waiting))
    return states


def _held_by(state: PoolState, instance: dg.DagsterInstance) -> str:
    if not state.holders:
        return "(its limit leaves no slot free)"
    runs = [f"{run_id} ({describe_run(instance.get_run_by_id(run_id))})" for run_id in state.holders]
    return f"held by run {', '.join(runs)}" if len(runs) == 1 else f"held by runs {', '.join(runs)}"


def _unique(values: Iterable[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(values))


def job_pools(job: dg.JobDefinition) -> set[str]:
    """The pools of the job's steps."""
    return {node.pool for node in job.graph.iterate_node_defs() if getattr(node, "pool", None)}


# ---------------------------------------------------------------------------
# The guard around a command's runs


class Stopped(KeyboardInterrupt):
    """SIGTERM or SIGINT asked this process to stop; ``detail`` says what became of the run."""

    def __init__(self, signum: int, detail: str = "") -> None:
        super().__init__(signum, detail)
        self.signum = signum
        self.detail = detail

    @property
    def name(self) -> str:
        return signal.Signals(self.signum).name


class _Forced(KeyboardInterrupt):
    """Raised in the main thread by the guard's watcher (through ``FORCE_SIGNAL``)."""


class PoolWaitExpired(UserError):
    """A pool stayed held by another live run for longer than SMS_PIPELINE_POOL_WAIT_S."""


def new_run_id() -> str:
    return str(uuid.uuid4())


class RunGuard:
    """One command's runs: waits for pools before each, watches each, stops on SIGTERM/SIGINT.

    Use as a context manager in the main thread (elsewhere it cannot install
    signal handlers, and only waits and reaps): :meth:`wait_for_pools` before a
    run, :meth:`execute` around it, with :meth:`tags` among the run's tags.
    Lines a person should see (who holds a pool, what was freed) go to
    ``say`` and to the log at INFO.
    """

    def __init__(self, instance: dg.DagsterInstance, pools: Iterable[str], *, wait_s: float,
                 say: Callable[[str], None] = print, poll_s: float = POLL_S) -> None:
        self.instance = instance
        self.pools = sorted(set(pools))
        self.me = ProcessIdentity.current()
        self.wait_s = wait_s
        self.poll_s = poll_s
        self._say = say
        self.stop_signal: int | None = None
        self.gave_up: str | None = None
        # Re-entrant: the signal handlers run in the main thread, possibly while it holds the lock.
        self._lock = threading.RLock()
        self._run_id: str | None = None
        self._force_armed = False
        self._forced_at: float | None = None
        self._force_at: float | None = None
        self._waiting_since: float | None = None
        self._announced: tuple | None = None
        self._signals_seen = 0
        self._canceling_reported = False
        self._deferring = False  # while a run is being settled, a stop signal is only recorded
        self._done = threading.Event()
        self._thread: threading.Thread | None = None
        self._watch_instance: dg.DagsterInstance | None = None
        self._main = threading.main_thread().ident
        self._signals_installed = False
        self._old_handlers: dict[int, object] = {}
        self._old_wakeup = -1
        self._wake: tuple[socket.socket, socket.socket] | None = None

    # -- lifecycle

    def __enter__(self) -> RunGuard:
        self._install_signals()
        self._thread = threading.Thread(target=self._watch, name="sms-pipeline-run-guard", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        self._done.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
        self._restore_signals()
        if self._watch_instance is not None and self._watch_instance is not self.instance:
            self._watch_instance.dispose()
        if exc_type is not None and issubclass(exc_type, _Forced):
            # the watcher's interrupt landed just outside watch()
            if self.gave_up:
                raise PoolWaitExpired(self.gave_up) from None
            raise Stopped(self.stop_signal or signal.SIGINT) from None

    def tags(self) -> dict[str, str]:
        """The tags that let a later process tell whether this process is still there."""
        return self.me.tags()

    def say(self, line: str) -> None:
        log.info(line)
        self._say(line)

    def reap(self, run_ids: Iterable[str] | None = None, *, instance: dg.DagsterInstance | None = None) -> None:
        """:func:`reap`, saying each line."""
        for line in reap(instance or self.instance, self.me, run_ids):
            self.say(line)

    # -- before a run

    def wait_for_pools(self) -> None:
        """Return once every pool of the run has a free slot; wait at most ``wait_s``.

        Dead holders are reaped as they are found; a holder that is alive
        (or cannot be checked from here) is waited for, and named.
        """
        try:
            self._wait_for_pools()
        except Stopped as stop:
            raise Stopped(stop.signum, "while waiting for a pool slot; no run was started") from None

    def _wait_for_pools(self) -> None:
        started: float | None = None
        while True:
            states = pool_states(self.instance, self.pools)
            others = {run for state in states for run in (*state.holders, *state.queued)}
            if others:
                self.reap(others)
                states = pool_states(self.instance, self.pools)
            blocked = [state for state in states if state.full]
            if not blocked:
                if started is not None:
                    self.say(f"pool free after {time.monotonic() - started:.0f} s")
                return
            now = time.monotonic()
            started = now if started is None else started
            self._announce(blocked, self.instance)
            if now - started >= self.wait_s:
                raise PoolWaitExpired(self._gave_up_line(blocked, self.instance))
            time.sleep(min(self.poll_s, max(0.05, started + self.wait_s - now)))

    # -- around a run

    def watch(self, run_id: str, launch: Callable[[], T]) -> T:
        """``launch()`` (which runs ``run_id`` in this process), watched.

        On the way out, however it ends, the run is settled: marked canceled
        (stop signal) or failed if it is still unfinished, its slots freed.
        Raises :class:`Stopped` after a stop signal and
        :class:`PoolWaitExpired` when a wait for a slot inside the run ran out.
        """
        with self._lock:
            self._run_id = run_id
            self._force_armed = False
            self._forced_at = self._force_at = self._waiting_since = None
            self._announced = None
            self._canceling_reported = False
        result = None
        try:
            result = launch()
        except KeyboardInterrupt as exc:
            if not isinstance(exc, _Forced) and self.stop_signal is None:
                self.stop_signal = exc.signum if isinstance(exc, Stopped) else signal.SIGINT
        finally:
            with self._lock:
                self._run_id = None
                self._force_armed = False
            self._signals_received(timeout=0)  # one Dagster handled before the watcher saw it
            self._deferring = True
            try:
                self._settle(run_id)
            finally:
                self._deferring = False
        if self.stop_signal is not None:
            raise Stopped(self.stop_signal, f"run {run_id} marked canceled, its pool slots freed")
        if self.gave_up is not None:
            raise PoolWaitExpired(f"{self.gave_up}; run {run_id} marked failed")
        if result is None:  # interrupted by the watcher with no reason left: cannot happen, but never hang on
            raise UserError(f"run {run_id} was interrupted; marked failed, its pool slots freed")
        return result

    def _settle(self, run_id: str) -> None:
        run = self.instance.get_run_by_id(run_id)
        if run is not None and run.status in UNFINISHED:
            if self.stop_signal is not None:
                self.instance.report_run_canceled(
                    run, f"Stopped by {signal.Signals(self.stop_signal).name} (sms-pipeline, {self.me}).")
            else:
                reason = f"gave up waiting for a pool slot: {self.gave_up}" if self.gave_up else \
                    "execution ended without finishing the run"
                self.instance.report_run_failed(run, f"Marked failed by sms-pipeline ({self.me}): {reason}.")
        _free(self.instance, run_id)

    # -- lines

    def _announce(self, blocked: Sequence[PoolState], instance: dg.DagsterInstance) -> None:
        key = tuple((state.pool, state.holders) for state in blocked)
        if key == self._announced:
            return
        self._announced = key
        for state in blocked:
            self.say(f"waiting for pool {state.pool} {_held_by(state, instance)}; "
                     f"at most {self.wait_s:g} s (SMS_PIPELINE_POOL_WAIT_S)")

    def _gave_up_line(self, blocked: Sequence[PoolState], instance: dg.DagsterInstance) -> str:
        state = blocked[0]
        return (f"pool {state.pool} still {_held_by(state, instance)} after {self.wait_s:g} s "
                "(SMS_PIPELINE_POOL_WAIT_S): let that run finish, or end it in the Dagster UI, then run again")

    # -- signals

    def _install_signals(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return
        reader, writer = socket.socketpair()
        reader.setblocking(False)
        writer.setblocking(False)
        self._wake = (reader, writer)
        self._old_handlers = {sig: signal.getsignal(sig) for sig in (*STOP_SIGNALS, FORCE_SIGNAL)}
        self._old_wakeup = signal.set_wakeup_fd(writer.fileno(), warn_on_full_buffer=False)
        for sig in STOP_SIGNALS:
            signal.signal(sig, self._on_stop_signal)
        signal.signal(FORCE_SIGNAL, self._on_force_signal)
        self._signals_installed = True

    def _restore_signals(self) -> None:
        if not self._signals_installed:
            return
        signal.set_wakeup_fd(self._old_wakeup)
        for sig, handler in self._old_handlers.items():
            signal.signal(sig, handler if handler is not None else signal.SIG_DFL)
        assert self._wake is not None
        for end in self._wake:
            end.close()
        self._signals_installed = False

    def _on_stop_signal(self, signum: int, frame: FrameType | None) -> None:
        # Ours outside Dagster's execution; Dagster installs its own while a run executes
        # (and puts this one back, for SIGTERM too, when the run ends).
        if self.stop_signal is None:
            self.stop_signal = signum
        if not self._deferring:
            raise Stopped(signum)

    def _on_force_signal(self, signum: int, frame: FrameType | None) -> None:
        with self._lock:
            armed, self._force_armed = self._force_armed, False
        if armed:
            raise _Forced()

    def _force(self, why: str) -> None:
        """Interrupt the main thread, which is executing a run that will not end by itself."""
        with self._lock:
            now = time.monotonic()
            if self._run_id is None or (self._forced_at is not None and now - self._forced_at < 5):
                return
            if not self._signals_installed:
                log.warning("cannot interrupt the run (%s): not started from the main thread", why)
                return
            self._force_armed = True
            self._forced_at = now
        log.info("interrupting run %s: %s", self._run_id, why)
        signal.pthread_kill(self._main, FORCE_SIGNAL)

    # -- the watcher thread

    def _watch(self) -> None:
        next_poll = 0.0
        while not self._done.is_set():
            for signum in self._signals_received(timeout=min(0.25, self.poll_s)):
                self._stop_requested(signum)
            with self._lock:
                run_id = self._run_id
            if run_id is None:
                continue
            now = time.monotonic()
            if now >= next_poll:
                next_poll = now + self.poll_s
                try:
                    self._check(run_id)
                except Exception:  # the watcher must outlive a database hiccup
                    log.warning("checking run %s's pools failed", run_id, exc_info=True)
            if self._force_at is not None and time.monotonic() >= self._force_at:
                self._force(f"still running {STOP_GRACE_S:g} s after a stop signal")

    def _signals_received(self, timeout: float) -> list[int]:
        """Stop signals that arrived (whichever handler took them), recorded in ``stop_signal``."""
        if self._wake is None:
            if timeout:
                self._done.wait(timeout)
            return []
        reader = self._wake[0]
        try:
            ready, _, _ = select.select([reader], [], [], timeout)
            if not ready:
                return []
            with self._lock:
                received = [signum for signum in reader.recv(256) if signum in STOP_SIGNALS]
                if received and self.stop_signal is None:
                    self.stop_signal = received[0]
        except (OSError, ValueError):  # closed on the way out
            return []
        return received

    def _stop_requested(self, signum: int) -> None:
        if self.stop_signal is None:
            self.stop_signal = signum
        self._signals_seen += 1
        with self._lock:
            run_id = self._run_id
        if run_id is None:
            return  # the main thread is in our code: the handler has raised already
        instance = self._instance_for_thread()
        if not self._canceling_reported:
            self._canceling_reported = True
            try:
                run = instance.get_run_by_id(run_id)
                if run is not None and run.status in UNFINISHED - {dg.DagsterRunStatus.CANCELING}:
                    instance.report_run_canceling(run, f"Stop signal {signal.Signals(signum).name} received.")
            except Exception:
                log.warning("could not mark run %s canceling", run_id, exc_info=True)
        if self._waiting_since is not None or self._signals_seen > 1:
            self._force(f"{signal.Signals(signum).name} while waiting for a pool slot"
                        if self._waiting_since is not None else "a second stop signal")
        elif self._force_at is None:
            self._force_at = time.monotonic() + STOP_GRACE_S

    def _instance_for_thread(self) -> dg.DagsterInstance:
        if self._watch_instance is None:
            try:
                self._watch_instance = dg.DagsterInstance.from_ref(self.instance.get_ref())
            except Exception:  # an ephemeral instance has no ref: share it
                self._watch_instance = self.instance
        return self._watch_instance

    def _check(self, run_id: str) -> None:
        instance = self._instance_for_thread()
        waiting = [state for state in pool_states(instance, self.pools, run_id) if state.waiting]
        if not waiting:
            self._waiting_since = None
            self._announced = None
            return
        now = time.monotonic()
        if self._waiting_since is None:
            self._waiting_since = now
        others = {run for state in waiting for run in (*state.holders, *state.queued)}
        if others:
            self.reap(others, instance=instance)
        self._announce(waiting, instance)
        if self.stop_signal is not None:
            self._force(f"{signal.Signals(self.stop_signal).name} while waiting for a pool slot")
        elif now - self._waiting_since >= self.wait_s:
            if self.gave_up is None:
                self.gave_up = self._gave_up_line(waiting, instance)
            self._force("gave up waiting for a pool slot")
