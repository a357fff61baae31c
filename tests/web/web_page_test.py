#!/usr/bin/env python3
"""The web page in headless Chromium.

Builds the `wasm` preset, serves build/wasm/web/ on 127.0.0.1 (a free port) and loads the page
with URL parameters, reading back what it wrote into the DOM (--dump-dom) and what it drew
(--screenshot). Checks: no console error; lesson 02's solution against lesson 03's at step 9
shows the state the desktop viewer's --screenshot mode writes; the canvas is not blank; an
edited trace grades PASS, a worse one FAIL, a broken one reports its line and column.
Exit 0 when every check passes, 1 otherwise.
"""
import argparse
import html
import os
import re
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
import zlib

A = "lessons/02-locality/solution.fsa"
B = "lessons/03-outer-product/solution.fsa"
WIDTH, HEIGHT = 1280, 800  # the canvas, as the desktop --screenshot window
PANEL = 440                # the page's side panel, right of the canvas

failures = []


def check(ok, what, detail=""):
    print(("ok   " if ok else "FAIL ") + what + ("" if ok or not detail else "\n" + detail))
    if not ok:
        failures.append(what)


def build(source_dir):
    env = dict(os.environ, NODE_PATH="/usr/share/nodejs")
    for cmd in (["cmake", "--preset", "wasm"], ["cmake", "--build", "--preset", "wasm", "-j2"]):
        t0 = time.monotonic()
        r = subprocess.run(cmd, cwd=source_dir, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        print(f"{' '.join(cmd)}: exit {r.returncode} in {time.monotonic() - t0:.0f} s")
        if r.returncode != 0:
            print(r.stdout[-6000:])
            sys.exit(1)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """python3 -m http.server on the web folder, stopped on exit."""

    def __init__(self, folder):
        self.port = free_port()
        self.proc = subprocess.Popen([sys.executable, "-m", "http.server", str(self.port), "--bind", "127.0.0.1",
                                      "--directory", folder], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 15
        while True:
            try:
                urllib.request.urlopen(self.url(""), timeout=2).read()
                return
            except OSError:
                if time.monotonic() > deadline or self.proc.poll() is not None:
                    self.stop()
                    raise RuntimeError("the static server did not answer in 15 s")
                time.sleep(0.2)

    def url(self, query):
        return f"http://127.0.0.1:{self.port}/index.html" + ("?" + urllib.parse.urlencode(query) if query else "")

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def chromium(args, url, *extra, budget_ms=40000):  # virtual time; ample on a loaded machine
    with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as profile:
        cmd = [args.chromium, "--headless=new", "--no-sandbox", "--use-angle=swiftshader", "--enable-unsafe-swiftshader",
               f"--user-data-dir={profile}", f"--virtual-time-budget={budget_ms}",
               f"--window-size={WIDTH + PANEL},{HEIGHT}", *extra, url]
        r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=180)
    return r.stdout


def page(args, server, query):
    """Loads the page and returns {element id: text} for its <pre>s, plus 'settled'."""
    dom = chromium(args, server.url(query), "--dump-dom")
    if 'data-settled="1"' not in dom:
        # SwiftShader's first frames can miss the virtual-time budget on a loaded machine (seen once at
        # load 3 in CI): load the page once more with twice the budget before calling it a failure.
        dom = chromium(args, server.url(query), "--dump-dom", budget_ms=80000)
    out = {m.group(1): html.unescape(m.group(2)) for m in re.finditer(r'<pre id="([^"]+)"[^>]*>(.*?)</pre>', dom, re.S)}
    out["settled"] = 'data-settled="1"' in dom
    return out


def no_console_errors(result, what):
    check(result["settled"], f"{what}: the page rendered its frames")
    errors = result.get("console-errors", "")
    check(errors == "", f"{what}: no console error", errors)


def png_pixels(path):
    """(width, height, rows of RGBA bytes) of an 8-bit RGB or RGBA PNG."""
    data = open(path, "rb").read()
    pos, idat, width = 8, b"", 0
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, color = struct.unpack(">IIBB", body[:10])
            assert depth == 8 and color in (2, 6), "8-bit RGB or RGBA PNG expected"
            bpp = 4 if color == 6 else 3
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    raw, stride, rows, prev = zlib.decompress(idat), width * bpp, [], bytearray(width * bpp)
    for y in range(height):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if f == 1: line[i] = (line[i] + a) & 255
            elif f == 2: line[i] = (line[i] + b) & 255
            elif f == 3: line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        prev = line
    return width, height, bpp, rows


def desktop_state(args, out_dir):
    """What `flashsim-viewer A B --step 9 --screenshot` writes, less its layout rectangles."""
    png = os.path.join(out_dir, "desktop-step9.png")
    cmd = [args.xvfb_run, "-a", "-s", f"-screen 0 {WIDTH}x{HEIGHT}x24", args.viewer, A, B, "--step", "9",
           "--width", str(WIDTH), "--height", str(HEIGHT), "--screenshot", png]
    r = subprocess.run(cmd, cwd=args.source_dir, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=180)
    if r.returncode != 0:
        check(False, "desktop viewer --screenshot ran", r.stdout)
        return None
    text = open(png + ".txt").read()
    return "".join(l for l in text.splitlines(keepends=True) if not l.startswith("rect "))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--source-dir", required=True)
    ap.add_argument("--chromium", required=True)
    ap.add_argument("--viewer", required=True, help="the desktop flashsim-viewer")
    ap.add_argument("--xvfb-run", required=True)
    ap.add_argument("--out-dir", required=True, help="screenshots and the desktop state go here")
    ap.add_argument("--no-build", action="store_true", help="use build/wasm/web as it is")
    args = ap.parse_args()
    os.makedirs(args.out_dir, exist_ok=True)
    if not args.no_build:
        build(args.source_dir)
    web = os.path.join(args.source_dir, "build", "wasm", "web")
    for f in ("index.html", "flashsim.js", "flashsim.wasm", "flashsim.data"):
        check(os.path.isfile(os.path.join(web, f)), f"build/wasm/web/{f} exists")

    server = Server(web)
    try:
        # 1. The two lessons' solutions in lockstep at step 9: the desktop's state, a drawn canvas.
        query = {"a": A, "b": B, "step": 9, "w": WIDTH, "h": HEIGHT}
        r = page(args, server, query)
        no_console_errors(r, "compare at step 9")
        desktop = desktop_state(args, args.out_dir)
        if desktop is not None:
            same = r.get("state", "") == desktop
            detail = "" if same else "--- page ---\n" + r.get("state", "") + "--- desktop ---\n" + desktop
            check(same, "the page's state at step 9 equals the desktop --screenshot state (step, registers, counters)", detail)
        stats = re.search(r"colours=(\d+) unlike_corner=([\d.]+)%", r.get("canvas-stats", ""))
        check(stats is not None and int(stats.group(1)) > 100 and float(stats.group(2)) > 20,
              "the canvas is drawn (in-page pixel read: many colours, most pixels unlike the corner)", r.get("canvas-stats", ""))

        shot = os.path.join(args.out_dir, "web-compare-step9.png")
        chromium(args, server.url(query), f"--screenshot={shot}")
        if os.path.isfile(shot):
            w, h, bpp, rows = png_pixels(shot)
            colours = {rows[y][x * bpp:x * bpp + 3] for y in range(0, min(h, HEIGHT), 4) for x in range(0, min(w, WIDTH), 4)}
            check(len(colours) > 100, f"the screenshot's canvas area is not blank ({len(colours)} colours)")
        else:
            check(False, "chromium wrote a screenshot")

        # 2. Step back, and run to a breakpoint in lockstep: line 18 is A's 13th instruction (STORE
        # c[0][1]) and B's 14th, so the run stops after 12 steps, before A's.
        r = page(args, server, {"a": A, "b": B, "step": 9, "back": 2})
        check("step_index: 7\n" in r.get("state", "") and r["state"].count("step: 7/") == 2,
              "two steps back from 9 leave both traces at step 7", r.get("state", ""))
        r = page(args, server, {"a": A, "b": B, "break": 18, "run": "break"})
        no_console_errors(r, "run to a breakpoint")
        state = r.get("state", "")
        check(state.count("breakpoints: 18\n") == 2 and "next: line 18: STORE R2, c[0][1]" in state and
              "step_index: 12\n" in state, "run to the breakpoint on line 18 stops before A's STORE (step 12)", state)

        # 3. Grading an edited trace: as it is plus a comment (PASS), with one LOAD too many (FAIL).
        solution = open(os.path.join(args.source_dir, A)).read()
        passing = solution + "# edited in the page\n"
        first_load = "LOAD a[0][0], R0\n"
        assert first_load in solution
        failing = solution.replace(first_load, first_load + first_load, 1)
        r = page(args, server, {"a": A, "edit": passing, "grade": 1})
        no_console_errors(r, "grade a passing edit")
        check(r.get("grade-result", "").startswith("PASS"), "an edited passing trace grades PASS", r.get("grade-result", ""))
        r = page(args, server, {"a": A, "edit": failing, "grade": 1})
        no_console_errors(r, "grade a failing edit")
        grade = r.get("grade-result", "")
        check(grade.startswith("FAIL") and "14 LOADs" in grade, "one LOAD too many grades FAIL (14 LOADs, budget 13)", grade)

        # 4. A broken edit: the assembler's FILE:LINE:COL error, with the line and a caret.
        r = page(args, server, {"a": A, "edit": "LOAD a[0][0], R0\nMAC_Z R0, R1\n"})
        no_console_errors(r, "assemble a broken edit")
        err = r.get("assemble-result", "")
        check(re.search(r"solution\.fsa:2:\d+: error: ", err) is not None and "^" in err,
              "a broken edit reports line 2 with its column and a caret", err)
    finally:
        server.stop()
    print(f"{len(failures)} check(s) failed" if failures else "all checks passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
