#!/usr/bin/env python3
"""Regenerate the README's screen captures from the real app (release build, --demo, tmux).

Usage: readme_captures.py BINARY OUTDIR (tmux and python3 needed; nothing of the user is read:
HOME and the XDG dirs point into a fresh temporary folder). Writes OUTDIR/NN.txt, one per ```text block of the README,
in order. Runs of blank rows are shortened to one; trailing spaces dropped.
"""
import os, subprocess, sys, tempfile, time

BIN, OUT = sys.argv[1], sys.argv[2]
os.makedirs(OUT, exist_ok=True)
HOME = tempfile.mkdtemp(prefix="capture-home-")
ENV = {"HOME": HOME, "XDG_CACHE_HOME": f"{HOME}/.cache", "XDG_DATA_HOME": f"{HOME}/.local/share",
       "XDG_CONFIG_HOME": f"{HOME}/.config", "TERM": "xterm-256color", "LANG": "C.UTF-8"}

SOCKET = os.environ.get("CAPTURE_TMUX_SOCKET", "capture")  # one's own tmux server (tmux -L)

def tmux(*args):
    return subprocess.run(["tmux", "-L", SOCKET, *args], capture_output=True, text=True).stdout

def start(cols, rows, extra="", env=None):
    tmux("kill-server")
    time.sleep(0.5)
    envs = " ".join(f"{k}={v}" for k, v in {**ENV, **(env or {})}.items())
    tmux("new-session", "-d", "-x", str(cols), "-y", str(rows),
         f"env -i PATH=/usr/bin:/bin {envs} {BIN} --demo {extra}; sleep 30")
    wait_for("Ask anything")

def screen():
    return tmux("capture-pane", "-p", "-t", "0")

def wait_for(text, timeout=20):
    end = time.time() + timeout
    while time.time() < end:
        s = screen()
        if text in s:
            return s
        time.sleep(0.1)
    raise SystemExit(f"timed out waiting for {text!r}:\n{screen()}")

def keys(*k, literal=False):
    tmux("send-keys", "-t", "0", *(["-l"] if literal else []), *k)

def typed(text):
    keys(text, literal=True)

n = 0
def save(settle=0.6):
    global n
    time.sleep(settle)
    lines = [l.rstrip() for l in screen().split("\n")]
    out, blank = [], False
    for l in lines:
        if not l:
            if blank:
                continue
            blank = True
        else:
            blank = False
        out.append(l)
    while out and not out[-1]:
        out.pop()
    n += 1
    with open(f"{OUT}/{n:02}.txt", "w") as f:
        f.write("\n".join(out) + "\n")

# 1. start
start(80, 24); save()
# 2. @
typed("@"); wait_for("@ sessions"); save()
# 3. @vite
typed("vite"); wait_for("1/1"); save()
# closest
keys("C-u"); typed("@vte-bld"); wait_for("closest matches"); save()
# in conversations
keys("C-u"); typed("@replication"); wait_for("in conversations"); save(1.5)
# preview at 112 columns
start(112, 36); typed("@vite"); wait_for("not truncated"); save()
# 4. pick and write
start(80, 24); typed("@vite"); wait_for("1/1"); keys("Enter"); typed("what did we decide?"); time.sleep(0.5); save()
# 5. send
keys("Enter"); wait_for("Conversation so far"); save()
# 6. Ctrl+O
keys("C-o"); wait_for("Ctrl+O"); save()
# 7. tight budget, streaming
cfg = f"{HOME}/tight.toml"
open(cfg, "w").write("[references]\nmax_reference_bytes = 700\n")
start(80, 24, f"--config {cfg}", {"DSH_REFS_OFFLINE_DELAY_MS": "250"})
typed("@postgres"); wait_for("1/1"); keys("Enter"); typed("@jwt"); wait_for("1/1"); keys("Enter")
typed("which rollout risks do these share?"); time.sleep(0.3); keys("Enter")
wait_for("responding"); save(1.8)
# 8. interrupt, Ctrl+O
keys("Escape"); wait_for("interrupted"); keys("C-o"); save()
# 9. errors
cfg = f"{HOME}/down.toml"
open(cfg, "w").write('[model]\nprovider = "openai"\nbase_url = "http://127.0.0.1:9"\nmodel = "deepseek-chat"\napi_key_env = "CAPTURE_KEY"\nmax_retries = 0\n')
start(80, 24, f"--config {cfg}", {"CAPTURE_KEY": "not-a-real-key"})
typed("hello"); keys("Enter"); wait_for("LLM_"); save()
# 10. recall: a word said only at the start of a long, truncated session, found by the tool
start(80, 24); typed("@p99"); wait_for("1/1"); keys("Enter"); typed("where did this start?")
keys("C-j"); typed("recall: tuesday deploy"); time.sleep(0.3); keys("Enter")
wait_for("searched"); wait_for("Conversation so far"); save()
# /resume with filter atlas, 112 columns
start(112, 24); typed("/resume"); keys("Enter"); wait_for("Resume a session"); typed("atlas"); wait_for("not truncated"); save()
# /resume sunday, 120 columns
start(120, 16); typed("/resume"); keys("Enter"); wait_for("Resume a session"); typed("sunday"); wait_for("in conversations"); time.sleep(1); keys("Down"); wait_for("not truncated"); save(1)
tmux("kill-server")
print(f"{n} captures in {OUT}")
