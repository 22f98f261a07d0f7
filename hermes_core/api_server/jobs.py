"""`/api/jobs`: the cron jobs, as Hermes' API server has them (its routes and success shapes; errors
are this server's OpenAI-style objects). A named key reaches only the jobs it created; the
operator's keys reach every job (`owners`). `POST /api/jobs/{id}/run` makes a job due now: the
scheduler's next tick (`hermes gateway run`, `hermes cron tick`) runs it."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from hermes_core import CronError
from hermes_core.cron import check_repeat, now, open_jobs, zone
from hermes_core.cron.schedule import parse_schedule

from .http import ApiError, Json, read_json
from .keys import ApiKey
from .owners import JOB, job_not_found

if TYPE_CHECKING:
    from .core import Core, RouteMaker

__all__ = ["CronJobs"]

_ID = re.compile(r"[a-f0-9]{12}")
_TEXTS = ("name", "schedule", "prompt", "deliver")
_EDITABLE = ("name", "schedule", "prompt", "deliver", "skills", "repeat", "enabled")
_TARGET = re.compile(r"local|origin|[A-Za-z0-9_-]+(:[^\x00-\x20:,]+(:[^\x00-\x20,]+)?)?")
_DELIVER_FORMS = "local, origin, <platform> or <platform>:<chat id>[:<thread id>], comma-separated"


class CronJobs:
    """The jobs routes of one server."""

    def __init__(self, server: Core) -> None:
        self.server = server
        self.jobs = open_jobs(server.manager.home, kind="serve")

    def routes(self, route: RouteMaker) -> list[Route]:
        return [route("/api/jobs", "jobs", self._list, ["GET"]),
                route("/api/jobs", "jobs", self._create, ["POST"]),
                route("/api/jobs/{job_id}", "jobs", self._get, ["GET"]),
                route("/api/jobs/{job_id}", "jobs", self._patch, ["PATCH"]),
                route("/api/jobs/{job_id}", "jobs", self._delete, ["DELETE"]),
                *(route(f"/api/jobs/{{job_id}}/{verb}", "jobs", self._verb, ["POST"])
                  for verb in ("pause", "resume", "run"))]

    def _clock(self) -> tuple[Any, Any]:
        """Now and the configured zone, or a 500 that names the setting that is wrong (`HERMES_CRON_NOW`,
        `cron.timezone`): the server's fault, in words."""
        try:
            return now(), zone(self.server.manager.config)
        except CronError as exc:
            raise ApiError(500, str(exc), type="server_error") from None

    def _id(self, request: Request, rights: ApiKey) -> str:
        job_id = str(request.path_params["job_id"])
        if not _ID.fullmatch(job_id):
            raise ApiError(400, f"Invalid job ID format: {job_id!r} (12 hex digits)", param="job_id")
        if not self.server.owners.reaches(JOB, job_id, rights) or not any(job.get("id") == job_id
                                                                           for job in self._read()):
            raise job_not_found(job_id)
        return job_id

    def _read(self) -> list[dict[str, Any]]:
        try:
            return self.jobs.read()
        except CronError as exc:
            raise ApiError(500, str(exc), type="server_error") from None

    async def _list(self, request: Request, rights: ApiKey, user: str) -> Response:
        everything = request.query_params.get("include_disabled", "").lower() in ("1", "true", "yes")
        mine = self.server.owners.mine(JOB, rights)
        return Json({"jobs": [job for job in self._read() if (everything or job.get("enabled", True))
                              and (mine is None or job.get("id") in mine)]})

    async def _get(self, request: Request, rights: ApiKey, user: str) -> Response:
        job_id = self._id(request, rights)
        return Json({"job": next(job for job in self._read() if job.get("id") == job_id)})

    async def _create(self, request: Request, rights: ApiKey, user: str) -> Response:
        body = await read_json(request, self.server.max_body)
        for field in ("name", "schedule"):
            if not isinstance(body.get(field), str) or not body[field].strip():
                raise ApiError(400, f"{field} is required (a non-empty string)", param=field)
        _texts(body)
        _check_repeat(body.get("repeat"))
        moment, tz = self._clock()
        _check_schedule(body["schedule"], moment, tz)
        try:
            job = self.jobs.add(body["schedule"], str(body.get("prompt") or ""), moment, tz, name=body["name"],
                                deliver=_deliver(body.get("deliver")) or "local", repeat=body.get("repeat"),
                                skills=_skills(body.get("skills")),
                                # a named key's job runs with that key's tools and its caller's memory
                                origin=None if rights.operator else {"platform": "api_server", "api_key": rights.name,
                                                                     "user_id": rights.caller(user)})
        except CronError as exc:
            raise ApiError(400, str(exc), param="schedule") from None
        self.server.owners.record(JOB, str(job["id"]), rights)
        return Json({"job": job})

    async def _patch(self, request: Request, rights: ApiKey, user: str) -> Response:
        job_id = self._id(request, rights)
        body = await read_json(request, self.server.max_body)
        unknown = sorted(set(body) - set(_EDITABLE))
        if unknown:
            raise ApiError(400, f"cannot change {', '.join(unknown)} (only {', '.join(_EDITABLE)})", param=unknown[0])
        _texts(body)
        _check_repeat(body.get("repeat"))
        if body.get("enabled") is not None and not isinstance(body["enabled"], bool):  # "false" is not ignored
            raise ApiError(400, "enabled must be true or false", param="enabled")
        moment, tz = self._clock()
        if body.get("schedule") is not None:
            if not isinstance(body["schedule"], str):
                raise ApiError(400, "schedule must be a string", param="schedule")
            _check_schedule(body["schedule"], moment, tz)
        try:
            job = self.jobs.edit(job_id, moment, tz, schedule=body.get("schedule"), prompt=body.get("prompt"),
                                 name=body.get("name"), deliver=_deliver(body.get("deliver")),
                                 repeat=body.get("repeat"),
                                 skills=_skills(body.get("skills")) if "skills" in body else None)
            if isinstance(body.get("enabled"), bool):
                job = self.jobs.set_paused(job_id, not body["enabled"], moment, tz)
        except CronError as exc:
            raise ApiError(400, str(exc)) from None
        return Json({"job": job})

    async def _delete(self, request: Request, rights: ApiKey, user: str) -> Response:
        job_id = self._id(request, rights)
        self.jobs.remove(job_id, self._clock()[0])
        return Json({"ok": True})

    async def _verb(self, request: Request, rights: ApiKey, user: str) -> Response:
        job_id = self._id(request, rights)
        verb = request.url.path.rsplit("/", 1)[-1]
        moment, tz = self._clock()
        job = self.jobs.trigger(job_id, moment, tz) if verb == "run" else \
            self.jobs.set_paused(job_id, verb == "pause", moment, tz)
        return Json({"job": job})


def _texts(body: dict[str, Any]) -> None:
    """400 unless each text field given is a string (or null): a list stored as `deliver`, say,
    would break every reader of the job."""
    for field in _TEXTS:
        if body.get(field) is not None and not isinstance(body[field], str):
            raise ApiError(400, f"{field} must be a string", param=field)


def _skills(value: Any) -> list[str] | None:
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ApiError(400, "skills must be a list of skill names", param="skills")
    return list(value)


def _check_schedule(text: str, moment: Any, tz: Any) -> None:
    """400 naming `schedule` unless `text` is a schedule cron reads and it fires: cron's one check
    (`hermes_core.cron.check_schedule`, which `parse_schedule` runs) says why not: a cron expression
    no date matches (`0 0 31 2 *`) never fires, a run past any date (`in 99999999999m`) is out of range."""
    try:
        parse_schedule(text, at=moment, tz=tz)
    except CronError as exc:
        raise ApiError(400, str(exc), param="schedule") from None


def _check_repeat(value: Any) -> None:
    """400 naming `repeat` unless it is a number of runs (cron's one check, `check_repeat`)."""
    try:
        check_repeat(value)
    except CronError as exc:
        raise ApiError(400, str(exc), param="repeat") from None


def _deliver(value: Any) -> str | None:
    """`deliver` as given (None: not given), or 400 saying what it may be."""
    if value is None:
        return None
    tokens = [token.strip() for token in value.split(",") if token.strip()] if isinstance(value, str) else []
    if not tokens or not all(_TARGET.fullmatch(token) for token in tokens):
        raise ApiError(400, f"deliver must be a string of targets: {_DELIVER_FORMS} (got {value!r:.60})",
                       param="deliver")
    return str(value)
