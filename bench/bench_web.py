#!/usr/bin/env python3
"""The web page's figures in headless Chromium, in real (not virtual) time.

Serves build/wasm/web/ on 127.0.0.1 and loads the page twice: once with lesson 02 vs 03 (page
load time: navigation to the first four frames drawn), once with ?bench=N (lesson 06 at
n = 71,429: 1,000,002 instructions; stepping rate and frame time, as bench_viewer on the desktop).
The page sends its figures back to this server (?report=1), which prints them.

    python3 bench/bench_web.py [--chromium chromium] [--n 71429] [--frames 120]
"""
import argparse
import functools
import http.server
import os
import signal
import subprocess
import sys
import tempfile
import threading
import urllib.parse

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def serve(folder, reports):
    class Handler(http.server.SimpleHTTPRequestHandler):
        def do_GET(self):
            url = urllib.parse.urlsplit(self.path)
            if url.path == "/report":
                reports.append(urllib.parse.unquote(url.query))
                self.send_response(204)
                self.end_headers()
                return
            super().do_GET()

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Handler, directory=folder))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def run(chromium, url, reports, timeout):
    before = len(reports)
    with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as profile:
        # Its own process group: Chromium's helper processes end with it.
        proc = subprocess.Popen([chromium, "--headless=new", "--no-sandbox", "--use-angle=swiftshader",
                                 "--enable-unsafe-swiftshader", f"--user-data-dir={profile}", "--window-size=1720,800",
                                 "--remote-debugging-port=0", url],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        try:
            for _ in range(timeout * 10):
                if len(reports) > before or proc.poll() is not None:
                    break
                threading.Event().wait(0.1)
        finally:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
    return reports[before] if len(reports) > before else "no report within %d s" % timeout


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--chromium", default="chromium")
    ap.add_argument("--n", type=int, default=71_429)
    ap.add_argument("--frames", type=int, default=120)
    ap.add_argument("--loads", type=int, default=3, help="page loads to time")
    args = ap.parse_args()
    web = os.path.join(ROOT, "build", "wasm", "web")
    wasm = os.path.join(web, "flashsim.wasm")
    if not os.path.isfile(wasm):
        sys.exit("bench_web: build the page first: cmake --workflow --preset wasm")
    reports = []
    server = serve(web, reports)
    base = f"http://127.0.0.1:{server.server_address[1]}/index.html?"
    sizes = {f: os.path.getsize(os.path.join(web, f)) for f in ("flashsim.wasm", "flashsim.js", "flashsim.data", "index.html")}
    print("sizes (bytes): " + ", ".join(f"{k} {v:,}" for k, v in sizes.items()))
    for i in range(args.loads):
        query = urllib.parse.urlencode({"a": "lessons/02-locality/solution.fsa", "b": "lessons/03-outer-product/solution.fsa",
                                        "step": 9, "w": 1280, "h": 800, "report": 1})
        print(f"--- page load {i + 1} ---\n" + run(args.chromium, base + query, reports, 120))
    query = urllib.parse.urlencode({"bench": args.n, "frames": args.frames, "w": 1280, "h": 800, "report": 1})
    print("--- 1M-instruction trace ---\n" + run(args.chromium, base + query, reports, 600))
    server.shutdown()


if __name__ == "__main__":
    main()
