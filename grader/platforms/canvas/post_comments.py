#!/usr/bin/env python3
"""Post each student's feedback as a comment on their Canvas submission.

`grader export canvas-comments --out DIR` writes this file beside DIR/comments.json. It
needs Python 3.8+ and nothing else; run it with a token of a teacher of the course (Canvas:
Account > Settings > New access token), in the environment, never on the command line:

    export CANVAS_TOKEN=...
    python3 post_comments.py --canvas https://canvas.example.edu --course 1234 --assignment 5678
        (shows what it would post, and what is there already: posts nothing)
    python3 post_comments.py --canvas https://canvas.example.edu --course 1234 --assignment 5678 --post

The course and assignment ids are in the assignment's address in Canvas
(/courses/1234/assignments/5678). For each student it sends the two documented requests of
Canvas's Submissions API:

    GET /api/v1/courses/:course_id/assignments/:assignment_id/submissions/:user_id
        ?include[]=submission_comments          (is this text there already?)
    PUT /api/v1/courses/:course_id/assignments/:assignment_id/submissions/:user_id
        comment[text_comment]=<the feedback>    ("Grade or comment on a submission")

:user_id is the student's Canvas user id, or sis_user_id:<id> / sis_login_id:<id> as
comments.json says. A text that is already a comment on the submission is not posted again,
so a second run posts nothing twice. Students see comments once the assignment's grades are
posted (Canvas's post policy). A request Canvas refuses is said with its status, and the
others go on; the exit status is 1 if any student was not reached, 2 for a usage mistake.
"""
import argparse
import json
import os
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

FORMAT = "attention-kit canvas comments 1"
LOCAL = ("localhost", "127.0.0.1", "::1")
RETRIES = 4


def _same(a, b):
    return str(a or "").replace("\r\n", "\n").strip() == str(b or "").replace("\r\n", "\n").strip()


class Canvas:
    """The two requests, with the token, retried while Canvas says its rate limit is hit."""

    def __init__(self, base, token, course, assignment, timeout=60, pause=2.0):
        self.base, self.token, self.timeout, self.pause = base.rstrip("/"), token, timeout, pause
        self.path = (f"/api/v1/courses/{urllib.parse.quote(str(course), safe='')}"
                     f"/assignments/{urllib.parse.quote(str(assignment), safe='')}/submissions/")

    def _send(self, method, url, body=None):
        for attempt in range(RETRIES):
            request = urllib.request.Request(url, data=body, method=method)
            request.add_header("Authorization", f"Bearer {self.token}")
            request.add_header("Accept", "application/json")
            if body is not None:
                request.add_header("Content-Type", "application/x-www-form-urlencoded")
            try:
                with urllib.request.urlopen(request, timeout=self.timeout) as response:
                    return response.status, json.loads(response.read().decode("utf-8") or "null")
            except urllib.error.HTTPError as error:
                said = error.read().decode("utf-8", "replace")[:300]
                if error.code == 403 and "rate limit" in said.lower() and attempt + 1 < RETRIES:
                    time.sleep(self.pause * 2 ** attempt)
                    continue
                return error.code, said
        return 0, "gave up"

    def comments(self, user):
        url = (self.base + self.path + urllib.parse.quote(user, safe=":")
               + "?" + urllib.parse.urlencode({"include[]": "submission_comments"}))
        status, data = self._send("GET", url)
        if status != 200 or not isinstance(data, dict):
            return status, data
        return status, [c.get("comment") for c in data.get("submission_comments") or []
                        if isinstance(c, dict)]

    def post(self, user, text):
        url = self.base + self.path + urllib.parse.quote(user, safe=":")
        body = urllib.parse.urlencode({"comment[text_comment]": text}).encode("utf-8")
        return self._send("PUT", url, body)


def main(argv=None):
    here = os.path.dirname(os.path.abspath(__file__))
    parser = argparse.ArgumentParser(description="Post each student's feedback as a comment "
                                                 "on their Canvas submission.")
    parser.add_argument("--canvas", required=True, help="the Canvas address, https://...")
    parser.add_argument("--course", required=True, help="the course id")
    parser.add_argument("--assignment", required=True, help="the assignment id")
    parser.add_argument("--comments", default=os.path.join(here, "comments.json"),
                        help="what to post (default: comments.json beside this script)")
    parser.add_argument("--post", action="store_true",
                        help="post them (without it: say what would be posted)")
    args = parser.parse_args(argv)
    token = os.environ.get("CANVAS_TOKEN", "").strip()
    if not token:
        print("post_comments.py: set CANVAS_TOKEN to a teacher's access token", file=sys.stderr)
        return 2
    address = urllib.parse.urlsplit(args.canvas)
    if address.scheme != "https" and not (address.scheme == "http" and address.hostname in LOCAL):
        print("post_comments.py: --canvas must be an https:// address (the token travels with "
              "every request)", file=sys.stderr)
        return 2
    try:
        with open(args.comments, encoding="utf-8") as handle:
            data = json.load(handle)
    except (OSError, ValueError) as error:
        print(f"post_comments.py: cannot read {args.comments}: {error}", file=sys.stderr)
        return 2
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        print(f"post_comments.py: {args.comments} is not what grader export canvas-comments "
              f"writes", file=sys.stderr)
        return 2
    canvas = Canvas(args.canvas, token, args.course, args.assignment)
    posted = there = failed = 0
    for item in data.get("comments") or []:
        user, text, name = str(item.get("user", "")), str(item.get("text", "")), item.get("name", "")
        status, found = canvas.comments(user)
        if status != 200:
            print(f"  {name} ({user}): not reached: {status} {found}")
            failed += 1
            continue
        if any(_same(text, old) for old in found):
            print(f"  {name} ({user}): already there")
            there += 1
            continue
        if not args.post:
            print(f"  {name} ({user}): would post {len(text)} characters")
            continue
        status, answer = canvas.post(user, text)
        if status in (200, 201):
            print(f"  {name} ({user}): posted")
            posted += 1
        else:
            print(f"  {name} ({user}): not posted: {status} {answer}")
            failed += 1
    total = len(data.get("comments") or [])
    print(f"{total} student(s): {posted} posted, {there} already there, {failed} not reached"
          + ("" if args.post else " (nothing posted: add --post)"))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
