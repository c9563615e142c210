#!/usr/bin/env python3
"""A forge for bench/follow.sh: GitHub's REST subset the pull-request loop asks, on 127.0.0.1,
its one pull request's check still running (CI that never finishes), with ETags as GitHub sends
them. Counts every request and every `304 Not Modified`; `GET /stats` says them. Prints its port."""
import hashlib, http.server, json, subprocess, sys, threading

BARE = sys.argv[1]
STATS = {"requests": 0, "not_modified": 0}
PULLS = []
LOCK = threading.Lock()


def tip(branch):
    out = subprocess.run(["git", "-C", BARE, "rev-parse", "--verify", "-q", f"refs/heads/{branch}"],
                         capture_output=True, text=True)
    return out.stdout.strip() or None


class Forge(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def answer(self, status, value):
        body = json.dumps(value).encode()
        etag = '"%s"' % hashlib.sha1(body).hexdigest()
        if self.command == "GET" and status == 200 and self.headers.get("If-None-Match") == etag:
            STATS["not_modified"] += 1
            self.send_response(304)
            self.send_header("ETag", etag)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("ETag", etag)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def pull(self, p):
        return {"number": p["number"], "html_url": f"https://forge.bench/pull/{p['number']}", "state": "open",
                "merged": False, "mergeable": True, "mergeable_state": "clean",
                "head": {"ref": p["head"], "sha": tip(p["head"]) or ""}, "base": {"ref": p["base"], "sha": tip(p["base"]) or ""}}

    def route(self):
        with LOCK:
            if self.path == "/stats":
                return self.answer(200, STATS)
            STATS["requests"] += 1
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}")
            path = self.path.split("?")[0].strip("/").split("/")
            rest = path[3:]
            if rest == []:
                return self.answer(200, {"full_name": "octo/hello"})
            if rest[:1] == ["branches"]:
                sha = tip(rest[1])
                return self.answer(200, {"commit": {"sha": sha}}) if sha else self.answer(404, {"message": "Not Found"})
            if rest == ["pulls"] and self.command == "GET":
                return self.answer(200, [self.pull(p) for p in PULLS])
            if rest == ["pulls"]:
                PULLS.append({"number": len(PULLS) + 1, "head": body["head"], "base": body["base"]})
                return self.answer(201, self.pull(PULLS[-1]))
            if rest[:1] == ["pulls"] and len(rest) == 2:
                return self.answer(200, self.pull(PULLS[int(rest[1]) - 1]))
            if rest[:1] == ["pulls"] and rest[2:] in (["reviews"], ["comments"]):
                return self.answer(200, [])
            if rest[:1] == ["commits"] and rest[2:] == ["check-runs"]:
                run = {"id": 1, "name": "test", "status": "in_progress", "conclusion": None}
                return self.answer(200, {"total_count": 1, "check_runs": [run]})
            if rest[:1] == ["commits"] and rest[2:] == ["status"]:
                return self.answer(200, {"state": "pending", "statuses": []})
            if rest[:1] == ["issues"]:
                return self.answer(201, {})
            return self.answer(404, {"message": "Not Found"})

    do_GET = do_POST = do_PUT = route


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Forge)
print(server.server_address[1], flush=True)
server.serve_forever()
