// The CPU time of a command and of every process it starts, Chromium's renderers and GPU process included,
// for benchmarks. `/usr/bin/time` and a shell's `times` count only descendants that were waited for up the
// chain; a process whose parent exits first (Chromium's zygote when the browser is killed) is reparented to
// init and its time is lost. Here a small Python parent makes itself the children's subreaper
// (prctl PR_SET_CHILD_SUBREAPER), so every orphan is reparented to it and reaped by it: getrusage(CHILDREN)
// then holds the whole tree. Python because node cannot call prctl; it is on every Debian image.
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export interface TreeCpu {
  /** The command's exit code (128 + signal when killed by one). */
  code: number;
  /** From start to the command's own exit. */
  wallSeconds: number;
  /** User and system CPU seconds of the command and every descendant. */
  userSeconds: number;
  systemSeconds: number;
  /** Descendants still running LINGER_SECONDS after the command exited (not counted, left running). */
  lingering: number;
  /** The command's stderr, its last 8,000 characters. */
  stderrTail: string;
}

const LINGER_SECONDS = 30;

const REAPER = String.raw`
import ctypes, json, os, resource, subprocess, sys, time
out = sys.argv[1]
if ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0) != 0:
    sys.exit("prctl(PR_SET_CHILD_SUBREAPER) failed: errno %d" % ctypes.get_errno())
start = time.monotonic()
child = subprocess.Popen(sys.argv[2:])
code = None
wall = None
deadline = None
while True:
    try:
        pid, status = os.waitpid(-1, 0 if code is None else os.WNOHANG)
    except ChildProcessError:
        break
    if pid == 0:
        if time.monotonic() > deadline:
            break
        time.sleep(0.1)
        continue
    if pid == child.pid:
        code = os.waitstatus_to_exitcode(status)
        code = code if code >= 0 else 128 - code
        wall = time.monotonic() - start
        deadline = time.monotonic() + ${LINGER_SECONDS}
lingering = 0
for entry in os.listdir("/proc"):
    if entry.isdigit():
        try:
            with open("/proc/%s/stat" % entry) as stat:
                if int(stat.read().rsplit(")", 1)[1].split()[1]) == os.getpid():
                    lingering += 1
        except OSError:
            pass
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
with open(out, "w") as f:
    json.dump({"code": code, "wall": wall, "user": usage.ru_utime, "system": usage.ru_stime, "lingering": lingering}, f)
`;

/** Run `command` with `args` (stdout ignored, stderr kept) and count the CPU time of its whole process tree. */
export async function runWithTreeCpu(command: string, args: string[], options: { cwd?: string; env?: NodeJS.ProcessEnv } = {}): Promise<TreeCpu> {
  const dir = mkdtempSync(join(tmpdir(), "tree-cpu-"));
  const out = join(dir, "usage.json");
  try {
    const child = spawn("python3", ["-c", REAPER, out, command, ...args], { cwd: options.cwd, env: { ...process.env, ...options.env }, stdio: ["ignore", "ignore", "pipe"] });
    let stderrTail = "";
    child.stderr!.on("data", (chunk: Buffer) => (stderrTail = (stderrTail + chunk.toString()).slice(-8000)));
    const reaperCode = await new Promise<number>((done, fail) => {
      child.on("error", fail);
      child.on("close", (c) => done(c ?? -1));
    });
    if (reaperCode !== 0) throw new Error(`the CPU-counting parent failed (${reaperCode}): ${stderrTail.slice(-1500)}`);
    const usage = JSON.parse(readFileSync(out, "utf8")) as { code: number; wall: number; user: number; system: number; lingering: number };
    return { code: usage.code, wallSeconds: usage.wall, userSeconds: usage.user, systemSeconds: usage.system, lingering: usage.lingering, stderrTail };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
