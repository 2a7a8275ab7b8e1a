/*
 * sandbench-exec: the in-container timing helper.
 *
 * Every command sandbench measures runs as
 *
 *     docker exec CONTAINER /.sandbench/sandbench-exec run --sweep [opts] -- ARGV...
 *
 * (the orchestrator bind-mounts this binary read-only from the host at that path; no arm
 * image carries a helper of its own), and the helper's stdout is the stream the orchestrator reads. The tool under test never
 * writes to that stream: its stdout and stderr arrive here through pipes and are re-emitted
 * inside length-prefixed frames, and the last frame is the helper's own result. Whatever
 * the tool prints, even bytes shaped like a result frame, stays tool output.
 *
 * Frame: 1 byte type, 4 bytes big-endian payload length, payload.
 *   'o' tool stdout chunk, 'e' tool stderr chunk (at most 64 KiB each)
 *   'r' result (JSON object, the last frame of `run`)
 *   'p' probe report (JSON object, the only frame of `probe`)
 *   'x' helper error (UTF-8 text; followed by 'r' when a result can still be given)
 *
 * Commands:
 *   run [--as UID:GID] [--sweep] [--timeout-ms N] [--grace-ms N] [--cap-bytes N] [--cwd DIR]
 *       -- ARGV...
 *   probe [--as UID:GID] [--connect HOST:PORT] [--lookup NAME] [--nameserver ADDR[:PORT]]
 *       [--write PATH] [--writable DIR]...
 *   idle
 *   serve
 *   --version
 *
 * `run --sweep` first kills every process left in the container but PID 1 (see
 * sweep_container) and reports how many in `stray_swept`.
 *
 * `serve` is the resident executor: as the container's PID 1 it reads requests on its stdin
 * (the engine's attach stream; nothing in the container can reach it, see cmd_serve) and
 * answers each by forking a runner that does exactly what `run` or `probe` would under
 * docker exec, so the same timing, sweep and frames, without the runtime's exec cost.
 *   request, on stdin:  'q' | 4 bytes length | the runner's arguments, each ended by NUL
 *   answer, on stdout:  'c' frames carrying the runner's frame stream as it comes (at most
 *                       64 KiB each), then one 'z' frame: "exit N" or "signal N" (ASCII)
 * The envelope is PID 1's own: a runner killed in the middle of one of its frames cannot
 * shift the 'z' that ends the answer.
 *
 * Exit status: 0 when the result (or probe) frame was written; 125 when it was not (usage
 * error, a set-up failure, or a reader that went away).
 *
 * Two uids. In a sandbox the executor (PID 1, and each runner it forks or docker exec
 * starts) is the container's uid 0 holding only CAP_SETUID and CAP_SETGID, and the tool runs
 * as the run's uid, given by `--as UID:GID`, with no capability at all. A runner leaves the
 * supplementary groups, takes the tool's gid, and takes the tool's uid as its effective uid
 * only (real and saved stay 0): the tool's processes are then its to signal and to wait for,
 * and the pipes it makes are the tool's to reopen (/dev/stdout), while the tool, whose three
 * uids are all the tool's, can neither signal nor trace nor open the descriptors of any
 * process whose real uid is 0. That holds under gVisor too, which ignores PR_SET_DUMPABLE.
 * The tool itself takes all three uids before execve, which clears every capability it had.
 * Without --as, helper and tool share the helper's uid (a helper started as the tool's uid);
 * as uid 0 inside a sandbox (a runner of `serve`, or started by docker exec) the helper is the
 * executor and refuses to run or probe without --as.
 *
 * The decoder is orchestrator/execproto.py; keep the two in step.
 *
 * Build: gcc -std=c11 -O2 -Wall -Wextra -Werror -D_GNU_SOURCE -static -o sandbench-exec sandbench-exec.c
 *
 * Static, and it must stay so: the orchestrator mounts this one binary read-only from the
 * host into every sandbox, and no dynamic loader, LD_PRELOAD or /etc/ld.so.preload of the
 * arm's image may reach it. Nothing here may need NSS (no getaddrinfo, getpwnam, ...): a
 * static glibc would load the image's NSS modules for it (and warns at link time).
 */

#include <arpa/inet.h>
#include <dirent.h>
#include <grp.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define HELPER_VERSION "0.5.0"

#define EXIT_NO_RESULT 125
#define CHUNK_MAX 65536u
/* Output the helper holds back per stream while the tool runs: relaying it through the
   exec stream costs CPU in the helper, the runtime and the engine, which would otherwise be
   timed as the tool's own. Past this much, frames go out while the tool still runs. */
#define SPOOL_MAX (8u << 20)
#define DEFAULT_CAP_BYTES (64ull << 20)
#define DEFAULT_GRACE_MS 2000ull
/* Longest a process may take to die after SIGKILL before we report it and move on. */
#define SWEEP_LIMIT_MS 5000
/* Longest we wait for EOF on the tool's pipes once every process is gone (see drain). */
#define DRAIN_LIMIT_MS 2000
#define CONNECT_TIMEOUT_MS 2000
#define NS_PER_MS 1000000ll
#define MAX_MS (INT64_MAX / NS_PER_MS)

static const char USAGE[] =
    "usage: sandbench-exec run [--as UID:GID] [--sweep] [--timeout-ms N] [--grace-ms N]"
    " [--cap-bytes N] [--cwd DIR] -- ARGV...\n"
    "       sandbench-exec probe [--as UID:GID] [--connect HOST:PORT] [--lookup NAME]"
    " [--nameserver ADDR] [--write PATH] [--writable DIR]...\n"
    "       sandbench-exec idle\n"
    "       sandbench-exec serve\n"
    "       sandbench-exec --version\n";

/* ------------------------------------------------------------------------------------- */
/* Small utilities                                                                        */

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

/* Milliseconds from now until `deadline` (CLOCK_MONOTONIC ns), rounded up so that a poll
   with this timeout never wakes before the deadline and spins. */
static int ms_until(int64_t deadline)
{
    int64_t left = deadline - now_ns();
    if (left <= 0)
        return 0;
    int64_t ms = (left + NS_PER_MS - 1) / NS_PER_MS;
    return ms > INT_MAX ? INT_MAX : (int)ms;
}

/* "ENOENT: No such file or directory", optionally prefixed by the failing step. */
static void format_errno(char *out, size_t size, const char *step, int err)
{
    const char *name = strerrorname_np(err);
    char unknown[16];
    if (name == NULL) {
        snprintf(unknown, sizeof unknown, "E%d", err);
        name = unknown;
    }
    if (step != NULL)
        snprintf(out, size, "%s: %s: %s", step, name, strerror(err));
    else
        snprintf(out, size, "%s: %s", name, strerror(err));
}

/* If the helper was started with 0, 1 or 2 closed, the pipes we create would land on those
   numbers and the child's dup2 calls would shuffle the wrong descriptors. */
static void ensure_std_fds(void)
{
    for (int fd = 0; fd <= 2; fd++) {
        if (fcntl(fd, F_GETFD) < 0 && errno == EBADF) {
            int null = open("/dev/null", O_RDWR);
            if (null >= 0 && null != fd)
                close(null);
        }
    }
}

/* ------------------------------------------------------------------------------------- */
/* Frames on stdout                                                                       */

/* errno of the first failed write to stdout, or 0. Once set, nothing more is written:
   the reader is gone and a half-written frame cannot be completed anyway. */
static int g_out_errno;

/* writev that finishes the job: resumes after partial writes and EINTR. */
static int writev_all(int fd, struct iovec *iov, int count)
{
    while (count > 0) {
        ssize_t n = writev(fd, iov, count);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        while (count > 0 && (size_t)n >= iov->iov_len) {
            n -= (ssize_t)iov->iov_len;
            iov++;
            count--;
        }
        if (count > 0) {
            iov->iov_base = (char *)iov->iov_base + n;
            iov->iov_len -= (size_t)n;
        }
    }
    return 0;
}

static bool emit_frame(char type, const void *payload, size_t len)
{
    if (g_out_errno != 0)
        return false;
    if (len > UINT32_MAX) {
        g_out_errno = EMSGSIZE;
        return false;
    }
    unsigned char header[5] = {
        (unsigned char)type,
        (unsigned char)(len >> 24), (unsigned char)(len >> 16),
        (unsigned char)(len >> 8), (unsigned char)len,
    };
    struct iovec iov[2] = {
        { .iov_base = header, .iov_len = sizeof header },
        { .iov_base = (void *)payload, .iov_len = len },
    };
    if (writev_all(STDOUT_FILENO, iov, 2) < 0) {
        g_out_errno = errno;
        return false;
    }
    return true;
}

/* A helper error: an 'x' frame for the orchestrator and the same line on our stderr for a
   person running the helper by hand. */
__attribute__((format(printf, 1, 2)))
static void helper_error(const char *fmt, ...)
{
    char text[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    emit_frame('x', text, strlen(text));
    fprintf(stderr, "sandbench-exec: %s\n", text);
}

__attribute__((format(printf, 1, 2)))
static int usage_error(const char *fmt, ...)
{
    char text[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    helper_error("usage: %s", text);
    fputs(USAGE, stderr);
    return EXIT_NO_RESULT;
}

/* ------------------------------------------------------------------------------------- */
/* A growable byte buffer and a JSON writer on top of it                                  */

struct buf {
    char *data;
    size_t len, cap;
    bool failed; /* an allocation failed; the content is incomplete */
};

static bool buf_reserve(struct buf *b, size_t extra)
{
    if (b->failed)
        return false;
    if (b->len + extra <= b->cap)
        return true;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + extra)
        cap *= 2;
    char *data = realloc(b->data, cap);
    if (data == NULL) {
        b->failed = true;
        return false;
    }
    b->data = data;
    b->cap = cap;
    return true;
}

static void buf_add(struct buf *b, const void *s, size_t n)
{
    if (buf_reserve(b, n)) {
        memcpy(b->data + b->len, s, n);
        b->len += n;
    }
}

static void buf_adds(struct buf *b, const char *s)
{
    buf_add(b, s, strlen(s));
}

__attribute__((format(printf, 2, 3)))
static void buf_printf(struct buf *b, const char *fmt, ...)
{
    char text[64];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    /* Only ever used for numbers, which always fit. */
    if (n > 0 && (size_t)n < sizeof text)
        buf_add(b, text, (size_t)n);
    else
        b->failed = true;
}

static void buf_free(struct buf *b)
{
    free(b->data);
    *b = (struct buf){ 0 };
}

/* Length of the well-formed UTF-8 sequence at s (1 to 4 bytes), or 0 if it is not one
   (stray continuation byte, overlong form, surrogate, beyond U+10FFFF, cut short). */
static size_t utf8_sequence(const unsigned char *s, size_t n)
{
    unsigned char c = s[0];
    size_t len;
    uint32_t cp, min;
    if (c < 0x80)
        return 1;
    if ((c & 0xE0) == 0xC0) {
        len = 2, cp = c & 0x1F, min = 0x80;
    } else if ((c & 0xF0) == 0xE0) {
        len = 3, cp = c & 0x0F, min = 0x800;
    } else if ((c & 0xF8) == 0xF0) {
        len = 4, cp = c & 0x07, min = 0x10000;
    } else {
        return 0;
    }
    if (n < len)
        return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xC0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[i] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return len;
}

/* A JSON string. Paths, interface names and the like are bytes, not text: a byte that is
   not part of valid UTF-8 becomes U+FFFD so that the document stays valid JSON. */
static void json_str(struct buf *b, const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t n = strlen(s);
    buf_add(b, "\"", 1);
    while (n > 0) {
        size_t len = utf8_sequence(p, n);
        if (len == 0) {
            buf_adds(b, "\\ufffd");
            len = 1;
        } else if (*p == '"' || *p == '\\') {
            buf_add(b, "\\", 1);
            buf_add(b, p, 1);
        } else if (*p < 0x20) {
            char esc[8];
            snprintf(esc, sizeof esc, "\\u%04x", *p);
            buf_adds(b, esc);
        } else {
            buf_add(b, p, len);
        }
        p += len;
        n -= len;
    }
    buf_add(b, "\"", 1);
}

/* Separator before a member or element: a comma unless it is the first in its container
   (or directly follows a key). Lets the writers below stay free of "first" flags. */
static void json_sep(struct buf *b)
{
    if (b->len > 0 && !b->failed) {
        char last = b->data[b->len - 1];
        if (last != '{' && last != '[' && last != ':')
            buf_add(b, ",", 1);
    }
}

static void json_key(struct buf *b, const char *key)
{
    json_sep(b);
    json_str(b, key);
    buf_add(b, ":", 1);
}

static void json_kstr(struct buf *b, const char *key, const char *value)
{
    json_key(b, key);
    if (value != NULL)
        json_str(b, value);
    else
        buf_adds(b, "null");
}

static void json_kbool(struct buf *b, const char *key, bool value)
{
    json_key(b, key);
    buf_adds(b, value ? "true" : "false");
}

static void json_kint(struct buf *b, const char *key, int64_t value)
{
    json_key(b, key);
    buf_printf(b, "%" PRId64, value);
}

static void json_kuint(struct buf *b, const char *key, uint64_t value)
{
    json_key(b, key);
    buf_printf(b, "%" PRIu64, value);
}

static void json_knull(struct buf *b, const char *key)
{
    json_key(b, key);
    buf_adds(b, "null");
}

/* ------------------------------------------------------------------------------------- */
/* Argument parsing                                                                       */

/* A decimal number with nothing around it: no sign, no spaces, no suffix. */
static bool parse_u64(const char *s, uint64_t max, uint64_t *out)
{
    if (*s < '0' || *s > '9')
        return false;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno != 0 || *end != '\0' || v > max)
        return false;
    *out = v;
    return true;
}

/* ------------------------------------------------------------------------------------- */
/* Two identities: the executor's and the tool's                                          */

/* Set in a runner that `serve` forked: its parent is the namespace's PID 1, the serving
   helper itself, so the pre-exec sweep may run as it does under docker exec. */
static bool g_served;

/* The tool's ids from `--as UID:GID`; `set` is false without the option. */
struct tool_ids {
    bool set;
    uid_t uid;
    gid_t gid;
};

/* UID:GID, both decimal; uid 0 is refused: the tool never runs as the executor's uid. */
static bool parse_ids(const char *spec, struct tool_ids *ids)
{
    char text[48];
    const char *colon = strchr(spec, ':');
    uint64_t uid, gid;
    if (colon == NULL || (size_t)(colon - spec) >= sizeof text)
        return false;
    memcpy(text, spec, (size_t)(colon - spec));
    text[colon - spec] = '\0';
    if (!parse_u64(text, UINT32_MAX - 1, &uid) || !parse_u64(colon + 1, UINT32_MAX - 1, &gid)
        || uid == 0)
        return false;
    *ids = (struct tool_ids){ .set = true, .uid = (uid_t)uid, .gid = (gid_t)gid };
    return true;
}

/* A runner's identity (see the header): no supplementary group, the tool's gid, the tool's
   uid as effective uid, 0 as real and saved uid. Needs CAP_SETGID and CAP_SETUID, so only
   the executor's uid 0 can do it; the effective capabilities go with the effective uid. */
static bool become_runner(const struct tool_ids *ids)
{
    if (!ids->set)
        return true;
    if (getuid() != 0) {
        helper_error("--as %u:%u: refused: the helper runs as uid %u, and only the executor's "
                     "uid 0 starts a tool as another uid", (unsigned)ids->uid,
                     (unsigned)ids->gid, (unsigned)getuid());
        return false;
    }
    const char *step = setgroups(0, NULL) < 0 ? "setgroups"
        : setresgid(ids->gid, ids->gid, ids->gid) < 0 ? "setresgid"
        : setresuid(0, ids->uid, 0) < 0 ? "setresuid" : NULL;
    if (step != NULL) {
        char why[160];
        format_errno(why, sizeof why, step, errno);
        helper_error("cannot take the tool's ids %u:%u: %s", (unsigned)ids->uid,
                     (unsigned)ids->gid, why);
        return false;
    }
    return true;
}

/* Inside a sandbox (a runner PID 1 forked, or a helper started from outside the pid
   namespace, as docker exec starts it) uid 0 is the executor's: a command there without
   --as would run the tool as the executor, with its capabilities. Refused, naming why. */
static bool tool_ids_required(const struct tool_ids *ids, const char *command)
{
    bool in_sandbox = g_served || getppid() == 0;
    if (ids->set || geteuid() != 0 || !in_sandbox)
        return true;
    helper_error("%s: refused: as uid 0 in a sandbox this helper is the executor; the tool "
                 "runs only as another uid (--as UID:GID)", command);
    return false;
}

/* All three uids the tool's: what was left of the executor's capabilities is cleared. Safe
   between fork and exec (one system call). */
static bool become_tool(const struct tool_ids *ids)
{
    return !ids->set || setresuid(ids->uid, ids->uid, ids->uid) == 0;
}

/* PID 1's environment is the container's, which the tool gets from it; gVisor lets a process
   of another uid read /proc/1/environ, the strings on PID 1's initial stack. They are copied
   to the heap, where the commands PID 1 starts still find them, and zeroed where they were. */
static bool scrub_environment(void)
{
    extern char **environ;
    size_t n = 0;
    while (environ[n] != NULL)
        n++;
    char **copy = calloc(n + 1, sizeof *copy);
    if (copy == NULL)
        return false;
    for (size_t i = 0; i < n; i++)
        if ((copy[i] = strdup(environ[i])) == NULL)
            return false;
    for (size_t i = 0; i < n; i++)
        explicit_bzero(environ[i], strlen(environ[i]));
    environ = copy;
    return true;
}

/* ------------------------------------------------------------------------------------- */
/* Processes: finding and signalling every descendant of the helper                       */

struct proc {
    pid_t pid, ppid;
    char state;
};

struct proc_table {
    struct proc *v;
    size_t n, cap;
};

struct pid_list {
    pid_t *v;
    size_t n, cap;
};

static int compare_proc(const void *a, const void *b)
{
    pid_t x = ((const struct proc *)a)->pid, y = ((const struct proc *)b)->pid;
    return (x > y) - (x < y);
}

/* State and parent of one process from /proc/PID/stat. The command name is in parentheses
   and may itself contain ") ", so the fields are read after the last ')'. */
static bool read_proc_stat(pid_t pid, struct proc *out)
{
    char path[64], text[512];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    ssize_t n;
    do
        n = read(fd, text, sizeof text - 1);
    while (n < 0 && errno == EINTR);
    close(fd);
    if (n <= 0)
        return false;
    text[n] = '\0';
    char *close_paren = strrchr(text, ')');
    int ppid;
    if (close_paren == NULL || sscanf(close_paren + 1, " %c %d", &out->state, &ppid) != 2)
        return false;
    out->pid = pid;
    out->ppid = (pid_t)ppid;
    return true;
}

/* Every process visible in /proc, sorted by pid. Processes that exit while we read are
   simply missing. Returns false (errno set) if /proc cannot be listed or memory runs out. */
static bool load_proc_table(struct proc_table *t)
{
    t->n = 0;
    DIR *dir = opendir("/proc");
    if (dir == NULL)
        return false;
    bool ok = true;
    struct dirent *entry;
    while ((entry = readdir(dir)) != NULL) {
        char *end;
        long pid = strtol(entry->d_name, &end, 10);
        if (*end != '\0' || pid <= 0)
            continue;
        if (t->n == t->cap) {
            size_t cap = t->cap ? t->cap * 2 : 256;
            struct proc *v = realloc(t->v, cap * sizeof *v);
            if (v == NULL) {
                ok = false;
                break;
            }
            t->v = v;
            t->cap = cap;
        }
        if (read_proc_stat((pid_t)pid, &t->v[t->n]))
            t->n++;
    }
    int saved = errno;
    closedir(dir);
    errno = saved;
    if (ok)
        qsort(t->v, t->n, sizeof *t->v, compare_proc);
    return ok;
}

static const struct proc *find_proc(const struct proc_table *t, pid_t pid)
{
    struct proc key = { .pid = pid };
    return bsearch(&key, t->v, t->n, sizeof *t->v, compare_proc);
}

/* True if `ancestor` is on p's parent chain. Daemons that called setsid are still found:
   the helper is a subreaper, so an orphan's parent becomes the helper, never PID 1. */
static bool is_descendant(const struct proc_table *t, const struct proc *p, pid_t ancestor)
{
    pid_t parent = p->ppid;
    /* The bound guards against a chain read inconsistently while processes come and go. */
    for (size_t depth = 0; depth <= t->n && parent > 0; depth++) {
        if (parent == ancestor)
            return true;
        const struct proc *up = find_proc(t, parent);
        if (up == NULL)
            return false;
        parent = up->ppid;
    }
    return false;
}

static bool pid_list_contains(const struct pid_list *l, pid_t pid)
{
    for (size_t i = 0; i < l->n; i++)
        if (l->v[i] == pid)
            return true;
    return false;
}

static bool pid_list_add(struct pid_list *l, pid_t pid)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 16;
        pid_t *v = realloc(l->v, cap * sizeof *v);
        if (v == NULL)
            return false;
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n++] = pid;
    return true;
}

/* Send `sig` to every live (non-zombie) descendant of `ancestor`; with SIGTERM also send
   SIGCONT, so that a stopped process gets to act on it. Each pid that received the signal
   is added once to `signalled` when given. Returns the number of live descendants found,
   or -1 with errno set when /proc could not be read or the list could not grow (the
   signals are sent all the same). */
static int signal_descendants(pid_t ancestor, int sig, struct pid_list *signalled)
{
    static struct proc_table table;
    if (!load_proc_table(&table))
        return -1;
    int alive = 0;
    bool list_failed = false;
    for (size_t i = 0; i < table.n; i++) {
        const struct proc *p = &table.v[i];
        if (p->state == 'Z' || p->state == 'X' || !is_descendant(&table, p, ancestor))
            continue;
        alive++;
        if (kill(p->pid, sig) < 0)
            continue;
        if (sig == SIGTERM)
            kill(p->pid, SIGCONT);
        if (signalled != NULL && !pid_list_contains(signalled, p->pid)
            && !pid_list_add(signalled, p->pid))
            list_failed = true;
    }
    if (list_failed) {
        errno = ENOMEM;
        return -1;
    }
    return alive;
}

/* ------------------------------------------------------------------------------------- */
/* The cgroup's OOM-kill counter                                                          */

/* Value of `key` in a file of "key value" lines, as cgroup files are written. */
static bool read_keyed_counter(const char *path, const char *key, uint64_t *out)
{
    FILE *f = fopen(path, "re");
    if (f == NULL)
        return false;
    char line[256], name[128];
    uint64_t value;
    bool found = false;
    while (!found && fgets(line, sizeof line, f) != NULL) {
        if (sscanf(line, "%127s %" SCNu64, name, &value) == 2 && strcmp(name, key) == 0) {
            *out = value;
            found = true;
        }
    }
    fclose(f);
    return found;
}

static bool read_oom_kills(uint64_t *out)
{
    return read_keyed_counter("/sys/fs/cgroup/memory.events", "oom_kill", out)
        || read_keyed_counter("/sys/fs/cgroup/memory/memory.oom_control", "oom_kill", out);
}

/* ------------------------------------------------------------------------------------- */
/* run                                                                                    */


struct run_opts {
    uint64_t timeout_ms, grace_ms, cap_bytes;
    bool sweep;
    struct tool_ids as;
    const char *cwd;
    char **argv;
};

/* One of the tool's output pipes. */
struct stream {
    int fd;            /* read end, -1 once at EOF */
    char frame;        /* 'o' or 'e' */
    uint64_t total;    /* bytes the tool wrote */
    uint64_t relayed;  /* bytes sent on in frames: min(total, cap) */
    char *spool;       /* held-back bytes, SPOOL_MAX at most; NULL until first needed */
    size_t spooled;
};

enum phase {
    PHASE_RUNNING,     /* no signal sent yet */
    PHASE_TERMINATING, /* SIGTERM sent, waiting out the grace period */
    PHASE_KILLED,      /* SIGKILL sent */
};

struct run {
    struct run_opts opt;
    pid_t self;
    pid_t child;           /* 0 if fork failed */
    int sigfd;             /* signalfd for SIGCHLD and the interrupting signals */
    struct stream out, err;
    int64_t t_start, t_end;
    bool reaped;           /* the main child has been waited for */
    int status;
    char spawn_error[256]; /* empty unless the tool could not be started */
    enum phase phase;
    bool timed_out;
    int64_t kill_at;       /* end of the grace period */
    struct pid_list killed;/* every pid we sent SIGKILL, once each */
    size_t killed_before_exit;
    size_t swept;          /* processes left from earlier execs, killed before the tool */
    bool scan_error_reported;
};

static int parse_run_args(int argc, char **argv, struct run_opts *o)
{
    *o = (struct run_opts){ .grace_ms = DEFAULT_GRACE_MS, .cap_bytes = DEFAULT_CAP_BYTES };
    int i = 2;
    for (; i < argc && strcmp(argv[i], "--") != 0; i += 2) {
        const char *name = argv[i];
        uint64_t *number = NULL, max = MAX_MS;
        if (strcmp(name, "--sweep") == 0) {
            o->sweep = true;
            i--; /* a flag: no value */
            continue;
        }
        if (strcmp(name, "--as") == 0) {
            if (i + 1 >= argc || !parse_ids(argv[i + 1], &o->as))
                return usage_error("run: --as wants UID:GID with a uid other than 0, not '%s'",
                                   i + 1 < argc ? argv[i + 1] : "");
            continue;
        }
        if (strcmp(name, "--timeout-ms") == 0) {
            number = &o->timeout_ms;
        } else if (strcmp(name, "--grace-ms") == 0) {
            number = &o->grace_ms;
        } else if (strcmp(name, "--cap-bytes") == 0) {
            number = &o->cap_bytes;
            max = INT64_MAX;
        } else if (strcmp(name, "--cwd") != 0) {
            return usage_error("run: unknown option '%s' (the command goes after --)", name);
        }
        if (i + 1 >= argc)
            return usage_error("run: option %s needs a value", name);
        const char *value = argv[i + 1];
        if (number == NULL)
            o->cwd = value;
        else if (!parse_u64(value, max, number))
            return usage_error("run: %s wants a whole number up to %" PRIu64 ", not '%s'",
                               name, max, value);
    }
    if (i >= argc)
        return usage_error("run: missing -- before the command");
    if (i + 1 >= argc)
        return usage_error("run: no command after --");
    o->argv = &argv[i + 1];
    return 0;
}

/* How the child reports a failure between fork and exec over the CLOEXEC pipe. */
enum spawn_step { STEP_SETUP, STEP_CHDIR, STEP_EXEC };

struct spawn_report {
    int step;
    int err;
};

__attribute__((noreturn))
static void child_fail(int report_fd, enum spawn_step step)
{
    struct spawn_report report = { .step = step, .err = errno };
    ssize_t n;
    do
        n = write(report_fd, &report, sizeof report);
    while (n < 0 && errno == EINTR);
    _exit(127);
}

/* In the child, between fork and exec: only async-signal-safe calls. */
__attribute__((noreturn))
static void child_exec(const struct run_opts *o, int devnull, int out_w, int err_w,
                       int report_w)
{
    /* Its own process group, so that one kill() reaches the whole job. */
    if (setpgid(0, 0) < 0 || !become_tool(&o->as))
        child_fail(report_w, STEP_SETUP);
    /* The tool starts as if from a clean shell: the helper ignores SIGPIPE and blocks the
       signals it reads through its signalfd, and neither may leak into the tool. */
    struct sigaction dfl = { .sa_handler = SIG_DFL };
    for (int sig = 1; sig < NSIG; sig++)
        sigaction(sig, &dfl, NULL); /* fails harmlessly for SIGKILL, SIGSTOP, reserved */
    sigset_t none;
    sigemptyset(&none);
    if (sigprocmask(SIG_SETMASK, &none, NULL) < 0)
        child_fail(report_w, STEP_SETUP);
    if (dup2(devnull, STDIN_FILENO) < 0 || dup2(out_w, STDOUT_FILENO) < 0
        || dup2(err_w, STDERR_FILENO) < 0)
        child_fail(report_w, STEP_SETUP);
    if (o->cwd != NULL && chdir(o->cwd) < 0)
        child_fail(report_w, STEP_CHDIR);
    execvp(o->argv[0], o->argv);
    child_fail(report_w, STEP_EXEC);
}

static void describe_spawn_failure(struct run *r, const struct spawn_report *report)
{
    static const char *const steps[] = {
        [STEP_SETUP] = "child setup", [STEP_CHDIR] = "chdir", [STEP_EXEC] = NULL,
    };
    const char *step = report->step >= 0 && report->step <= STEP_EXEC
        ? steps[report->step] : "child setup";
    format_errno(r->spawn_error, sizeof r->spawn_error, step, report->err);
}

static void close_fd(int *fd)
{
    if (*fd >= 0) {
        close(*fd);
        *fd = -1;
    }
}

/* Give a pipe the largest buffer an unprivileged process may ask for (pipe-max-size,
   1 MiB by default), so that a tool's ordinary output fits in the pipes between it and the
   orchestrator and the tool is not held back, and timed, by the speed of the exec stream.
   Best effort: a pipe that keeps its default size still works. */
static void widen_pipe(int fd)
{
    long size = 1 << 20;
    int cfg = open("/proc/sys/fs/pipe-max-size", O_RDONLY | O_CLOEXEC);
    if (cfg >= 0) {
        char text[32];
        ssize_t n = read(cfg, text, sizeof text - 1);
        if (n > 0) {
            text[n] = '\0';
            long max = strtol(text, NULL, 10);
            if (max > 0 && max < size)
                size = max;
        }
        close(cfg);
    }
    (void)fcntl(fd, F_SETPIPE_SZ, (int)size);
}

/* Fork and exec the tool with its output on two pipes. Returns false only when the helper
   itself cannot work (no pipes, no /dev/null); a failed fork or exec is the tool's result
   and is recorded in spawn_error. */
static bool spawn_tool(struct run *r)
{
    int out[2] = { -1, -1 }, err[2] = { -1, -1 }, report[2] = { -1, -1 };
    int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (devnull < 0 || pipe2(out, O_CLOEXEC) < 0 || pipe2(err, O_CLOEXEC) < 0
        || pipe2(report, O_CLOEXEC) < 0) {
        char why[160];
        format_errno(why, sizeof why, devnull < 0 ? "open /dev/null" : "pipe2", errno);
        helper_error("cannot prepare the tool's stdio: %s", why);
        close_fd(&devnull);
        for (int i = 0; i < 2; i++) {
            close_fd(&out[i]);
            close_fd(&err[i]);
            close_fd(&report[i]);
        }
        return false;
    }

    r->t_start = now_ns();
    pid_t pid = fork();
    if (pid == 0)
        child_exec(&r->opt, devnull, out[1], err[1], report[1]);
    if (pid < 0) {
        r->t_end = now_ns();
        format_errno(r->spawn_error, sizeof r->spawn_error, "fork", errno);
    } else {
        r->child = pid;
        /* Also from this side: a timeout must not signal the group before it exists. */
        setpgid(pid, pid);
    }
    close(devnull);
    close(out[1]);
    close(err[1]);
    close(report[1]);

    if (pid > 0) {
        /* EOF here means the exec succeeded and closed the CLOEXEC write end. */
        struct spawn_report rep;
        ssize_t n;
        do
            n = read(report[0], &rep, sizeof rep);
        while (n < 0 && errno == EINTR);
        if (n == (ssize_t)sizeof rep)
            describe_spawn_failure(r, &rep);
    }
    close(report[0]);

    r->out = (struct stream){ .fd = out[0], .frame = 'o' };
    r->err = (struct stream){ .fd = err[0], .frame = 'e' };
    widen_pipe(out[0]);
    widen_pipe(err[0]);
    widen_pipe(STDOUT_FILENO);
    /* Non-blocking, so that draining can never hang on a pipe poll called readable. */
    fcntl(out[0], F_SETFL, O_NONBLOCK);
    fcntl(err[0], F_SETFL, O_NONBLOCK);
    return true;
}

/* Send what a stream holds back, in frames of at most CHUNK_MAX bytes. */
static void flush_stream(struct stream *s)
{
    for (size_t at = 0; at < s->spooled; at += CHUNK_MAX) {
        size_t len = s->spooled - at < CHUNK_MAX ? s->spooled - at : CHUNK_MAX;
        if (!emit_frame(s->frame, s->spool + at, len))
            break;
    }
    s->spooled = 0;
}

/* Keep bytes for a later frame; send them at once when there is no room to hold them. */
static bool spool_bytes(struct stream *s, const char *data, size_t len)
{
    if (s->spool == NULL && (s->spool = malloc(SPOOL_MAX)) == NULL)
        return emit_frame(s->frame, data, len);
    if (s->spooled + len > SPOOL_MAX)
        flush_stream(s);
    memcpy(s->spool + s->spooled, data, len);
    s->spooled += len;
    return g_out_errno == 0;
}

/* Move one chunk from a tool pipe into the stream's spool. Past the cap the bytes are still
   read (a tool must never block on a full pipe) and counted, but not kept. */
static void relay_chunk(struct run *r, struct stream *s)
{
    static char chunk[CHUNK_MAX];
    ssize_t n = read(s->fd, chunk, sizeof chunk);
    if (n < 0) {
        if (errno == EINTR || errno == EAGAIN)
            return;
        char why[160];
        format_errno(why, sizeof why, "read", errno);
        helper_error("tool %s pipe: %s; no more of it is relayed",
                     s->frame == 'o' ? "stdout" : "stderr", why);
        close_fd(&s->fd);
        return;
    }
    if (n == 0) {
        close_fd(&s->fd);
        return;
    }
    s->total += (uint64_t)n;
    uint64_t room = r->opt.cap_bytes - s->relayed;
    size_t forward = (uint64_t)n < room ? (size_t)n : (size_t)room;
    if (forward > 0 && spool_bytes(s, chunk, forward))
        s->relayed += forward;
}

/* Reap every child that has exited: the tool itself and the orphans the subreaper adopts
   (left as zombies they would use up the pids limit). Returns false once no children are
   left at all. */
static bool reap_children(struct run *r)
{
    for (;;) {
        int status;
        pid_t pid = waitpid(-1, &status, WNOHANG);
        if (pid > 0) {
            if (pid == r->child) {
                r->t_end = now_ns();
                r->status = status;
                r->reaped = true;
            }
            continue;
        }
        if (pid == 0)
            return true;
        if (errno == EINTR)
            continue;
        return false;
    }
}

/* Signal the tool's process group and every descendant of the helper. The group reaches
   processes forked a moment ago; the /proc walk reaches those that left the group (setsid,
   setpgid) but, thanks to the subreaper, are still our descendants. */
static void kill_tree(struct run *r, int sig)
{
    /* The group id is the child's pid, which cannot be reused until we reap the child. */
    if (!r->reaped) {
        kill(-r->child, sig);
        if (sig == SIGTERM)
            kill(-r->child, SIGCONT);
    }
    if (signal_descendants(r->self, sig, sig == SIGKILL ? &r->killed : NULL) < 0
        && !r->scan_error_reported) {
        char why[160];
        format_errno(why, sizeof why, "/proc", errno);
        helper_error("cannot list processes (%s): only the tool's process group was "
                     "signalled", why);
        r->scan_error_reported = true;
    }
}

/* The helper itself was asked to stop (or its reader vanished): nothing it runs may go on
   without it, so the whole tree is killed at once. */
static void abort_tool(struct run *r)
{
    if (r->phase != PHASE_KILLED) {
        kill_tree(r, SIGKILL);
        r->phase = PHASE_KILLED;
    }
}

static void read_signals(struct run *r)
{
    struct signalfd_siginfo info;
    ssize_t n;
    while ((n = read(r->sigfd, &info, sizeof info)) == (ssize_t)sizeof info) {
        int sig = (int)info.ssi_signo;
        if (sig != SIGCHLD && r->phase != PHASE_KILLED) {
            helper_error("received SIG%s; the tool was killed", sigabbrev_np(sig));
            abort_tool(r);
        }
    }
}

static void enforce_timeout(struct run *r)
{
    int64_t now = now_ns();
    if (r->phase == PHASE_RUNNING && r->opt.timeout_ms > 0
        && now - r->t_start >= (int64_t)r->opt.timeout_ms * NS_PER_MS) {
        r->timed_out = true;
        kill_tree(r, SIGTERM);
        r->phase = PHASE_TERMINATING;
        r->kill_at = now + (int64_t)r->opt.grace_ms * NS_PER_MS;
    }
    if (r->phase == PHASE_TERMINATING && now >= r->kill_at) {
        kill_tree(r, SIGKILL);
        r->phase = PHASE_KILLED;
    }
}

/* Poll timeout: until the next deadline that needs action, or forever. */
static int next_wakeup_ms(const struct run *r)
{
    if (r->phase == PHASE_RUNNING && r->opt.timeout_ms > 0)
        return ms_until(r->t_start + (int64_t)r->opt.timeout_ms * NS_PER_MS);
    if (r->phase == PHASE_TERMINATING)
        return ms_until(r->kill_at);
    return -1;
}

/* Relay output and enforce the timeout until the main child has been reaped. */
static void supervise(struct run *r)
{
    while (!r->reaped) {
        struct pollfd fds[3] = {
            { .fd = r->sigfd, .events = POLLIN },
            { .fd = r->out.fd, .events = POLLIN },
            { .fd = r->err.fd, .events = POLLIN },
        };
        if (poll(fds, 3, next_wakeup_ms(r)) < 0 && errno != EINTR) {
            char why[160];
            format_errno(why, sizeof why, "poll", errno);
            helper_error("%s; the tool was killed", why);
            abort_tool(r);
            while (waitpid(r->child, &r->status, 0) < 0 && errno == EINTR)
                continue;
            r->t_end = now_ns();
            r->reaped = true;
            return;
        }
        /* Reap first, so that the end time is not held back by relaying a chunk. */
        reap_children(r);
        if (fds[0].revents)
            read_signals(r);
        if (fds[1].revents)
            relay_chunk(r, &r->out);
        if (fds[2].revents)
            relay_chunk(r, &r->err);
        if (g_out_errno != 0)
            abort_tool(r);
        if (!r->reaped)
            enforce_timeout(r);
    }
}

/* Before the tool starts, nothing may run in the container but PID 1 (the idle helper)
   and this helper: a daemon whose own run helper was killed before it could sweep it up has
   been reparented to PID 1, which reaps but never kills. kill(-1, SIGKILL) reaches every
   process of our pid namespace that we may signal except its init (pid 1) and our own
   thread group (kernel/signal.c, kill_something_info), and everything in the sandbox runs
   as our effective uid (the tool's) or our real uid (the executor's). Repeated until /proc lists none (one not yet killed can still fork), bounded
   like sweep_strays. Only for a helper started from outside the namespace (docker exec: its
   parent is invisible, getppid() == 0): on a host kill(-1) would reach every process of the
   user. A runner forked by `serve` (PID 1 of the namespace) sweeps too. Returns false (no
   result) when the sweep may not run at all. */
static bool sweep_container(struct run *r)
{
    if (getppid() != 0 && !(g_served && getppid() == 1)) {
        helper_error("run --sweep: refused: the parent (pid %d) is inside this pid namespace; "
                     "only a helper started from outside it (docker exec) sweeps",
                     (int)getppid());
        return false;
    }
    static struct proc_table table;
    struct pid_list seen = { 0 };
    int64_t give_up = now_ns() + SWEEP_LIMIT_MS * NS_PER_MS;
    for (;;) {
        if (!load_proc_table(&table)) {
            char why[160];
            format_errno(why, sizeof why, "/proc", errno);
            helper_error("cannot list processes (%s): leftover processes may still run", why);
            break;
        }
        size_t alive = 0;
        for (size_t i = 0; i < table.n; i++) {
            const struct proc *p = &table.v[i];
            if (p->pid == 1 || p->pid == r->self || p->state == 'Z' || p->state == 'X')
                continue;
            alive++;
            if (!pid_list_contains(&seen, p->pid))
                (void)pid_list_add(&seen, p->pid);
        }
        if (alive == 0)
            break;
        if (ms_until(give_up) == 0) {
            helper_error("%zu leftover process(es) still alive %d ms after SIGKILL", alive,
                         SWEEP_LIMIT_MS);
            break;
        }
        kill(-1, SIGKILL);
        struct timespec pause = { .tv_nsec = 10 * NS_PER_MS };
        nanosleep(&pause, NULL);
    }
    r->swept = seen.n;
    free(seen.v);
    return true;
}

/* Wait up to `ms` for a signal (SIGCHLD, mostly) and discard what arrived. */
static void wait_for_signal(int sigfd, int ms)
{
    struct pollfd fd = { .fd = sigfd, .events = POLLIN };
    if (poll(&fd, 1, ms) > 0) {
        struct signalfd_siginfo info;
        while (read(sigfd, &info, sizeof info) > 0)
            continue;
    }
}

/* The tool has exited: nothing it started may outlive the exec. Kill every remaining
   descendant, again and again (a process not yet killed can still fork), and reap them
   all. Bounded, because a process stuck in the kernel does not die on SIGKILL. */
static void sweep_strays(struct run *r)
{
    int64_t give_up = now_ns() + SWEEP_LIMIT_MS * NS_PER_MS;
    for (;;) {
        bool children_left = reap_children(r);
        int alive = signal_descendants(r->self, SIGKILL, &r->killed);
        if (alive < 0) {
            char why[160];
            format_errno(why, sizeof why, "/proc", errno);
            helper_error("cannot list processes (%s): leftover processes may still run", why);
            return;
        }
        if (alive == 0 && !children_left)
            return;
        if (ms_until(give_up) == 0) {
            helper_error("%d process(es) still alive %d ms after SIGKILL", alive,
                         SWEEP_LIMIT_MS);
            return;
        }
        wait_for_signal(r->sigfd, 10);
    }
}

/* Read what is left in the pipes. Every writer is dead by now, so EOF comes right after
   the buffered bytes; the limit only matters if a descriptor escaped the tree (passed over
   a unix socket to a process outside it, for example). */
static void drain_streams(struct run *r)
{
    int64_t give_up = now_ns() + DRAIN_LIMIT_MS * NS_PER_MS;
    while (r->out.fd >= 0 || r->err.fd >= 0) {
        int left = ms_until(give_up);
        if (left == 0) {
            helper_error("tool output pipes still open %d ms after the tool's processes were "
                         "gone; output after that point is missing", DRAIN_LIMIT_MS);
            break;
        }
        struct pollfd fds[2] = {
            { .fd = r->out.fd, .events = POLLIN },
            { .fd = r->err.fd, .events = POLLIN },
        };
        int n = poll(fds, 2, left);
        if (n < 0 && errno != EINTR) {
            char why[160];
            format_errno(why, sizeof why, "poll", errno);
            helper_error("%s while draining the tool's output", why);
            break;
        }
        if (n > 0 && fds[0].revents)
            relay_chunk(r, &r->out);
        if (n > 0 && fds[1].revents)
            relay_chunk(r, &r->err);
    }
    close_fd(&r->out.fd);
    close_fd(&r->err.fd);
}

static uint64_t timeval_us(struct timeval tv)
{
    return (uint64_t)tv.tv_sec * 1000000u + (uint64_t)tv.tv_usec;
}

static void emit_result(const struct run *r, bool oom_known, uint64_t oom_kills)
{
    /* RUSAGE_CHILDREN covers every descendant that was waited for, by us or by a parent
       that was itself waited for; ru_maxrss is the largest single one, not a sum. */
    struct rusage ru;
    getrusage(RUSAGE_CHILDREN, &ru);
    bool spawned = r->reaped && r->spawn_error[0] == '\0';

    struct buf b = { 0 };
    buf_add(&b, "{", 1);
    json_kstr(&b, "helper_version", HELPER_VERSION);
    json_kint(&b, "wall_ns", r->t_end - r->t_start);
    json_kuint(&b, "user_us", timeval_us(ru.ru_utime));
    json_kuint(&b, "sys_us", timeval_us(ru.ru_stime));
    json_kint(&b, "maxrss_kb", ru.ru_maxrss);
    if (spawned && WIFEXITED(r->status))
        json_kint(&b, "exit_code", WEXITSTATUS(r->status));
    else
        json_knull(&b, "exit_code");
    if (spawned && WIFSIGNALED(r->status))
        json_kint(&b, "signal", WTERMSIG(r->status));
    else
        json_knull(&b, "signal");
    json_kbool(&b, "timed_out", r->timed_out);
    if (oom_known)
        json_kuint(&b, "oom_kills", oom_kills);
    else
        json_knull(&b, "oom_kills");
    json_kuint(&b, "stdout_bytes", r->out.total);
    json_kuint(&b, "stderr_bytes", r->err.total);
    json_kbool(&b, "stdout_truncated", r->out.total > r->opt.cap_bytes);
    json_kbool(&b, "stderr_truncated", r->err.total > r->opt.cap_bytes);
    json_kuint(&b, "stray_killed", r->killed.n - r->killed_before_exit);
    json_kuint(&b, "stray_swept", r->swept);
    json_kstr(&b, "spawn_error", r->spawn_error[0] ? r->spawn_error : NULL);
    json_kuint(&b, "cap_bytes", r->opt.cap_bytes);
    json_kuint(&b, "timeout_ms", r->opt.timeout_ms);
    json_kuint(&b, "grace_ms", r->opt.grace_ms);
    buf_add(&b, "}", 1);
    if (b.failed)
        helper_error("out of memory while writing the result");
    else
        emit_frame('r', b.data, b.len);
    buf_free(&b);
}

/* Become a subreaper, stop same-uid processes from reading our descriptors, and route the
   signals we care about into a signalfd instead of handlers. */
static bool prepare_helper(struct run *r)
{
    char why[160];
    r->self = getpid();
    if (prctl(PR_SET_CHILD_SUBREAPER, 1) < 0) {
        format_errno(why, sizeof why, "prctl(PR_SET_CHILD_SUBREAPER)", errno);
        helper_error("%s: a daemonising tool could escape", why);
        return false;
    }
    /* Non-dumpable: the tool, which runs as our uid, can neither ptrace us nor open
       /proc/<helper>/fd/1 and write forged frames into our stdout. */
    if (prctl(PR_SET_DUMPABLE, 0) < 0) {
        format_errno(why, sizeof why, "prctl(PR_SET_DUMPABLE)", errno);
        helper_error("%s: the tool could write into the helper's stdout", why);
        return false;
    }
    /* An inherited SIG_IGN for SIGCHLD would make the kernel reap children for us and
       lose the tool's exit status. */
    signal(SIGCHLD, SIG_DFL);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGCHLD);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGHUP);
    if (sigprocmask(SIG_BLOCK, &set, NULL) < 0
        || (r->sigfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC)) < 0) {
        format_errno(why, sizeof why, "signalfd", errno);
        helper_error("%s", why);
        return false;
    }
    return true;
}

static int cmd_run(int argc, char **argv)
{
    struct run r = { .sigfd = -1, .out.fd = -1, .err.fd = -1 };
    int rc = parse_run_args(argc, argv, &r.opt);
    if (rc != 0)
        return rc;
    /* The uids first: changing the effective uid resets the dumpable flag. */
    if (!tool_ids_required(&r.opt.as, "run") || !become_runner(&r.opt.as)
        || !prepare_helper(&r))
        return EXIT_NO_RESULT;
    if (r.opt.sweep && !sweep_container(&r))
        return EXIT_NO_RESULT;

    uint64_t oom_before = 0, oom_after = 0;
    bool oom_known = read_oom_kills(&oom_before);
    if (!spawn_tool(&r))
        return EXIT_NO_RESULT;
    if (r.child > 0) {
        supervise(&r);
        r.killed_before_exit = r.killed.n;
        sweep_strays(&r);
    }
    drain_streams(&r);
    flush_stream(&r.out);
    flush_stream(&r.err);
    free(r.out.spool);
    free(r.err.spool);
    oom_known = oom_known && read_oom_kills(&oom_after) && oom_after >= oom_before;

    emit_result(&r, oom_known, oom_after - oom_before);
    free(r.killed.v);
    if (g_out_errno != 0) {
        char why[160];
        format_errno(why, sizeof why, "write", g_out_errno);
        fprintf(stderr, "sandbench-exec: stdout: %s; no result was delivered\n", why);
        return EXIT_NO_RESULT;
    }
    return 0;
}

/* ------------------------------------------------------------------------------------- */
/* probe: facts about the sandbox, as seen from inside it. No judgement here.             */

/* The name lookup, without NSS and without a libc resolver. The helper is static: a static
   glibc would still dlopen the image's NSS modules to resolve (the image's code in our
   process, and no lookup at all where the image has none), and musl's resolver ignores
   send errors and waits out its whole timeout. So the probe asks the nameservers of
   /etc/resolv.conf (a file the engine provides; 127.0.0.1 when it names none, as libc
   does) itself: one query for an A record per server, over a connected UDP socket so that
   an unreachable server fails at once. Any reply counts as resolved: for isolation,
   reaching a resolver is the leak, whatever it answers. */

#define MAX_NAMESERVERS 3
#define LOOKUP_TIMEOUT_MS 2000
#define DNS_PORT 53

struct nameserver {
    struct sockaddr_storage addr;
    socklen_t len;
    char text[INET6_ADDRSTRLEN + 8];
};

/* IPV4, IPV6 or [IPV6] with an optional :PORT (IPv4) or ]:PORT (IPv6). */
static bool parse_nameserver(const char *spec, uint16_t default_port, struct nameserver *ns)
{
    char host[INET6_ADDRSTRLEN + 2];
    uint64_t port = default_port;
    const char *end = spec + strlen(spec);
    if (spec[0] == '[') {
        const char *close = strchr(spec, ']');
        if (close == NULL)
            return false;
        if (close[1] != '\0' && (close[1] != ':' || !parse_u64(close + 2, 65535, &port)))
            return false;
        spec++;
        end = close;
    } else if (strchr(spec, '.') != NULL && strchr(spec, ':') != NULL) {
        const char *colon = strrchr(spec, ':');
        if (!parse_u64(colon + 1, 65535, &port))
            return false;
        end = colon;
    }
    if (port == 0 || (size_t)(end - spec) >= sizeof host)
        return false;
    memcpy(host, spec, (size_t)(end - spec));
    host[end - spec] = '\0';
    *ns = (struct nameserver){ 0 };
    struct sockaddr_in *v4 = (struct sockaddr_in *)&ns->addr;
    struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)&ns->addr;
    if (inet_pton(AF_INET, host, &v4->sin_addr) == 1) {
        v4->sin_family = AF_INET;
        v4->sin_port = htons((uint16_t)port);
        ns->len = sizeof *v4;
    } else if (inet_pton(AF_INET6, host, &v6->sin6_addr) == 1) {
        v6->sin6_family = AF_INET6;
        v6->sin6_port = htons((uint16_t)port);
        ns->len = sizeof *v6;
    } else {
        return false;
    }
    snprintf(ns->text, sizeof ns->text, "%s", host);
    return true;
}

/* The nameserver lines of /etc/resolv.conf, as libc reads them (at most three). */
static size_t read_nameservers(struct nameserver *out)
{
    size_t n = 0;
    FILE *f = fopen("/etc/resolv.conf", "re");
    if (f != NULL) {
        char line[512], word[16], addr[INET6_ADDRSTRLEN + 1];
        while (n < MAX_NAMESERVERS && fgets(line, sizeof line, f) != NULL) {
            if (sscanf(line, " %15s %46s", word, addr) == 2
                && strcmp(word, "nameserver") == 0 && strchr(addr, '%') == NULL
                && parse_nameserver(addr, DNS_PORT, &out[n]))
                n++;
        }
        fclose(f);
    }
    if (n == 0 && parse_nameserver("127.0.0.1", DNS_PORT, &out[0]))
        n = 1;
    return n;
}

/* A DNS query for NAME's A record with recursion desired; 0 if NAME is not a DNS name. */
static size_t dns_query(const char *name, uint16_t id, unsigned char *q, size_t size)
{
    size_t len = 12;
    memset(q, 0, len);
    q[0] = (unsigned char)(id >> 8);
    q[1] = (unsigned char)id;
    q[2] = 0x01; /* RD */
    q[5] = 1;    /* QDCOUNT */
    const char *label = name;
    if (*name == '\0' || strlen(name) > 253)
        return 0;
    for (;;) {
        const char *dot = strchr(label, '.');
        size_t n = dot != NULL ? (size_t)(dot - label) : strlen(label);
        if (n == 0) {
            if (dot == NULL && label != name)
                break; /* a trailing dot */
            return 0;
        }
        if (n > 63 || len + 1 + n + 5 > size)
            return 0;
        q[len++] = (unsigned char)n;
        memcpy(q + len, label, n);
        len += n;
        if (dot == NULL)
            break;
        label = dot + 1;
    }
    q[len++] = 0;
    q[len++] = 0, q[len++] = 1; /* QTYPE A */
    q[len++] = 0, q[len++] = 1; /* QCLASS IN */
    return len;
}

/* Send the query to one server and wait for its reply. Returns 0 when a reply with our id
   arrived (*rcode set), else the errno of *step (ETIMEDOUT when nothing came back). */
static int ask_nameserver(const struct nameserver *ns, const unsigned char *q, size_t qlen,
                          int *rcode, const char **step)
{
    *step = "socket";
    int fd = socket(ns->addr.ss_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return errno;
    int err = 0;
    *step = "connect";
    if (connect(fd, (const struct sockaddr *)&ns->addr, ns->len) < 0) {
        err = errno;
        goto out;
    }
    *step = "send";
    if (send(fd, q, qlen, 0) < 0) {
        err = errno;
        goto out;
    }
    *step = "recv";
    int64_t give_up = now_ns() + LOOKUP_TIMEOUT_MS * NS_PER_MS;
    for (;;) {
        struct pollfd p = { .fd = fd, .events = POLLIN };
        int n = poll(&p, 1, ms_until(give_up));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            *step = "poll";
            err = errno;
            break;
        }
        if (n == 0) {
            err = ETIMEDOUT;
            break;
        }
        unsigned char reply[512];
        ssize_t got = recv(fd, reply, sizeof reply, 0);
        if (got < 0) {
            if (errno == EINTR || errno == EAGAIN)
                continue;
            err = errno;
            break;
        }
        /* Our id, and the QR bit: a reply to our query, not an echo of it. */
        if (got >= 12 && reply[0] == q[0] && reply[1] == q[1] && (reply[2] & 0x80)) {
            *rcode = reply[3] & 0x0f;
            break;
        }
    }
out:
    close(fd);
    return err;
}

#define MAX_WRITABLE 8

struct probe_opts {
    const char *connect, *lookup, *nameserver, *write, *as;
    const char *writable[MAX_WRITABLE]; /* directories the tool must be able to write */
    size_t n_writable;
    struct tool_ids ids;
    char host[INET_ADDRSTRLEN];
    struct sockaddr_in addr;
};

/* HOST:PORT with a numeric IPv4 host: the probe must never depend on name resolution. */
static bool parse_host_port(const char *spec, struct probe_opts *o)
{
    const char *colon = strrchr(spec, ':');
    if (colon == NULL || (size_t)(colon - spec) >= sizeof o->host)
        return false;
    memcpy(o->host, spec, (size_t)(colon - spec));
    o->host[colon - spec] = '\0';
    uint64_t port;
    o->addr = (struct sockaddr_in){ .sin_family = AF_INET };
    if (inet_pton(AF_INET, o->host, &o->addr.sin_addr) != 1
        || !parse_u64(colon + 1, 65535, &port) || port == 0)
        return false;
    o->addr.sin_port = htons((uint16_t)port);
    return true;
}

static int parse_probe_args(int argc, char **argv, struct probe_opts *o)
{
    *o = (struct probe_opts){ 0 };
    for (int i = 2; i < argc; i += 2) {
        const char *name = argv[i];
        bool more = strcmp(name, "--writable") == 0 && o->n_writable < MAX_WRITABLE;
        const char **slot = more ? &o->writable[o->n_writable++]
                          : strcmp(name, "--connect") == 0 ? &o->connect
                          : strcmp(name, "--lookup") == 0  ? &o->lookup
                          : strcmp(name, "--nameserver") == 0 ? &o->nameserver
                          : strcmp(name, "--write") == 0   ? &o->write
                          : strcmp(name, "--as") == 0      ? &o->as
                          : NULL;
        if (slot == NULL && strcmp(name, "--writable") == 0)
            return usage_error("probe: at most %d --writable directories", MAX_WRITABLE);
        if (slot == NULL)
            return usage_error("probe: unknown option '%s'", name);
        if (i + 1 >= argc)
            return usage_error("probe: option %s needs a value", name);
        *slot = argv[i + 1];
    }
    if (o->as != NULL && !parse_ids(o->as, &o->ids))
        return usage_error("probe: --as wants UID:GID with a uid other than 0, not '%s'",
                           o->as);
    if (o->connect != NULL && !parse_host_port(o->connect, o))
        return usage_error("probe: --connect wants IPV4:PORT, not '%s'", o->connect);
    struct nameserver ns;
    if (o->nameserver != NULL && !parse_nameserver(o->nameserver, DNS_PORT, &ns))
        return usage_error("probe: --nameserver wants IPV4[:PORT] or [IPV6][:PORT], not '%s'",
                           o->nameserver);
    return 0;
}

static void probe_ids(struct buf *b)
{
    json_kuint(b, "uid", getuid());
    json_kuint(b, "gid", getgid());
    json_key(b, "groups");
    int n = getgroups(0, NULL);
    gid_t *groups = n >= 0 ? calloc((size_t)n + 1, sizeof *groups) : NULL;
    if (groups != NULL)
        n = getgroups(n, groups);
    if (groups == NULL || n < 0) {
        buf_adds(b, "null");
    } else {
        buf_add(b, "[", 1);
        for (int i = 0; i < n; i++) {
            json_sep(b);
            buf_printf(b, "%u", (unsigned)groups[i]);
        }
        buf_add(b, "]", 1);
    }
    free(groups);
}

/* The lines of a /proc/PID/status the guards read, as the kernel prints them: capability
   sets in hex, Uid and Gid as their four ids (real, effective, saved, file system) joined by
   spaces, NoNewPrivs and Seccomp as numbers; null for a line the kernel does not print. */
static void probe_status(struct buf *b, const char *key, const char *path, bool ids)
{
    static const char *const keys[] = {
        "CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb", "Uid", "Gid", "NoNewPrivs",
        "Seccomp",
    };
    enum { N_KEYS = sizeof keys / sizeof keys[0], FIRST_ID = 5, FIRST_INT = 7 };
    char values[N_KEYS][64] = { { 0 } };

    json_key(b, key);
    FILE *f = fopen(path, "re");
    if (f == NULL) {
        buf_adds(b, "null");
        return;
    }
    char line[512], name[64], value[64];
    while (fgets(line, sizeof line, f) != NULL) {
        if (sscanf(line, "%63[^:]: %63[^\n]", name, value) != 2)
            continue;
        for (char *c = value; *c != '\0'; c++)
            if (*c == '\t')
                *c = ' ';
        for (size_t k = 0; k < N_KEYS; k++)
            if (strcmp(name, keys[k]) == 0)
                memcpy(values[k], value, sizeof value);
    }
    fclose(f);

    buf_add(b, "{", 1);
    for (size_t k = 0; k < N_KEYS; k++) {
        uint64_t number;
        if (k >= FIRST_ID && k < FIRST_INT && !ids)
            continue;
        if (values[k][0] == '\0')
            json_knull(b, keys[k]);
        else if (k < FIRST_INT)
            json_kstr(b, keys[k], values[k]);
        else if (parse_u64(values[k], UINT64_MAX, &number))
            json_kuint(b, keys[k], number);
        else
            json_knull(b, keys[k]);
    }
    buf_add(b, "}", 1);
}

static int compare_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The network interfaces of the probe's namespace, in byte order, from /proc/net/dev: the
   kernel's own table under runc and under gVisor (whose sysfs, 2024-07, has no class/net). */
static void probe_interfaces(struct buf *b)
{
    enum { MAX_INTERFACES = 256 };
    json_key(b, "interfaces");
    FILE *f = fopen("/proc/net/dev", "re");
    if (f == NULL) {
        buf_adds(b, "null");
        return;
    }
    static char names[MAX_INTERFACES][64];
    char *sorted[MAX_INTERFACES];
    char line[512];
    size_t n = 0;
    for (int row = 0; n < MAX_INTERFACES && fgets(line, sizeof line, f) != NULL; row++) {
        char *colon = strchr(line, ':');
        if (row < 2 || colon == NULL)
            continue; /* the two header lines */
        *colon = '\0';
        char *name = line + strspn(line, " ");
        snprintf(names[n], sizeof names[n], "%s", name);
        sorted[n] = names[n];
        n++;
    }
    fclose(f);
    qsort(sorted, n, sizeof sorted[0], compare_names);
    buf_add(b, "[", 1);
    for (size_t i = 0; i < n; i++) {
        json_sep(b);
        json_str(b, sorted[i]);
    }
    buf_add(b, "]", 1);
}

/* The lines of a /proc/net table, verbatim but for the newline; null if unreadable. */
static void probe_lines(struct buf *b, const char *key, const char *path, bool skip_header)
{
    json_key(b, key);
    FILE *f = fopen(path, "re");
    if (f == NULL) {
        buf_adds(b, "null");
        return;
    }
    char *line = NULL;
    size_t size = 0;
    ssize_t len;
    bool first = true;
    buf_add(b, "[", 1);
    while ((len = getline(&line, &size, f)) >= 0) {
        if (len > 0 && line[len - 1] == '\n')
            line[len - 1] = '\0';
        if (!(first && skip_header)) {
            json_sep(b);
            json_str(b, line);
        }
        first = false;
    }
    buf_add(b, "]", 1);
    free(line);
    fclose(f);
}

/* {host, port, ok, errno, error} for a network attempt; err == 0 means it worked. */

/* The errno and error members of a probe fact: null when the step succeeded. */
static void json_kerrno(struct buf *b, const char *step, int err)
{
    if (err == 0) {
        json_knull(b, "errno");
        json_knull(b, "error");
        return;
    }
    char why[200];
    format_errno(why, sizeof why, step, err);
    json_kint(b, "errno", err);
    json_kstr(b, "error", why);
}

static void probe_net_result(struct buf *b, const char *key, const struct probe_opts *o,
                             const char *step, int err)
{
    json_key(b, key);
    buf_add(b, "{", 1);
    json_kstr(b, "host", o->host);
    json_kuint(b, "port", ntohs(o->addr.sin_port));
    json_kbool(b, "ok", err == 0);
    json_kerrno(b, step, err);
    buf_add(b, "}", 1);
}

static void probe_lookup(struct buf *b, const char *name, const char *server)
{
    json_key(b, "lookup");
    if (name == NULL) {
        buf_adds(b, "null");
        return;
    }
    struct nameserver ns[MAX_NAMESERVERS];
    size_t count = 0;
    if (server != NULL)
        count = parse_nameserver(server, DNS_PORT, &ns[0]) ? 1 : 0;
    else
        count = read_nameservers(ns);
    unsigned char q[300];
    size_t qlen = dns_query(name, (uint16_t)(now_ns() ^ getpid()), q, sizeof q);
    buf_add(b, "{", 1);
    json_kstr(b, "name", name);
    bool answered = false;
    char first_error[200] = "";
    struct buf servers = { 0 };
    buf_add(&servers, "[", 1);
    for (size_t i = 0; qlen > 0 && i < count; i++) {
        int rcode = -1;
        const char *step;
        int err = ask_nameserver(&ns[i], q, qlen, &rcode, &step);
        json_sep(&servers);
        buf_add(&servers, "{", 1);
        json_kstr(&servers, "server", ns[i].text);
        json_kbool(&servers, "answered", err == 0);
        if (err == 0)
            json_kint(&servers, "rcode", rcode);
        else
            json_knull(&servers, "rcode");
        json_kerrno(&servers, step, err);
        buf_add(&servers, "}", 1);
        answered = answered || err == 0;
        if (err != 0 && first_error[0] == '\0') {
            char why[160];
            format_errno(why, sizeof why, step, err);
            snprintf(first_error, sizeof first_error, "%s: %s", ns[i].text, why);
        }
    }
    buf_add(&servers, "]", 1);
    json_kbool(b, "ok", answered);
    if (answered)
        json_knull(b, "error");
    else if (qlen == 0)
        json_kstr(b, "error", "not a DNS name");
    else if (count == 0)
        json_kstr(b, "error", "no usable nameserver");
    else
        json_kstr(b, "error", first_error);
    json_key(b, "servers");
    if (servers.failed)
        buf_adds(b, "null");
    else
        buf_add(b, servers.data, servers.len);
    buf_free(&servers);
    buf_add(b, "}", 1);
}

/* connect() on a non-blocking socket, then wait for the outcome for at most
   CONNECT_TIMEOUT_MS (reported as ETIMEDOUT). Returns 0 or the errno of `*step`. */
static int connect_within(int fd, const struct sockaddr_in *addr, const char **step)
{
    *step = "connect";
    if (connect(fd, (const struct sockaddr *)addr, sizeof *addr) == 0)
        return 0;
    if (errno != EINPROGRESS)
        return errno;
    int64_t give_up = now_ns() + CONNECT_TIMEOUT_MS * NS_PER_MS;
    struct pollfd p = { .fd = fd, .events = POLLOUT };
    int n;
    do
        n = poll(&p, 1, ms_until(give_up));
    while (n < 0 && errno == EINTR);
    if (n < 0) {
        *step = "poll";
        return errno;
    }
    if (n == 0)
        return ETIMEDOUT;
    int err;
    socklen_t len = sizeof err;
    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0) {
        *step = "getsockopt";
        return errno;
    }
    return err;
}

/* A TCP connect. Sets *step to the call that failed and returns its errno, or 0. */
static int tcp_connect(const struct sockaddr_in *addr, const char **step)
{
    *step = "socket";
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return errno;
    int err = connect_within(fd, addr, step);
    close(fd);
    return err;
}

/* connect() then send() of one datagram: with no route, one of the two fails. */
static int udp_send(const struct sockaddr_in *addr, const char **step)
{
    static const char datagram[] = "sandbench-probe";
    *step = "socket";
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return errno;
    int err = 0;
    *step = "connect";
    if (connect(fd, (const struct sockaddr *)addr, sizeof *addr) < 0) {
        err = errno;
    } else {
        *step = "send";
        if (send(fd, datagram, sizeof datagram - 1, 0) < 0)
            err = errno;
    }
    close(fd);
    return err;
}

static void probe_network(struct buf *b, const struct probe_opts *o)
{
    if (o->connect == NULL) {
        json_knull(b, "connect");
        json_knull(b, "udp");
        return;
    }
    const char *step;
    int err = tcp_connect(&o->addr, &step);
    probe_net_result(b, "connect", o, step, err);
    err = udp_send(&o->addr, &step);
    probe_net_result(b, "udp", o, step, err);
}

/* Can a new file be created at PATH? ok reflects the open; an unlink failure after a
   successful open (which leaves the file behind) is reported in errno/error. */
static void write_try(struct buf *b, const char *path)
{
    const char *step = "open";
    int err = 0;
    int fd = open(path, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0600);
    bool ok = fd >= 0;
    if (!ok) {
        err = errno;
    } else {
        close(fd);
        step = "unlink";
        if (unlink(path) < 0)
            err = errno;
    }
    buf_add(b, "{", 1);
    json_kstr(b, "path", path);
    json_kbool(b, "ok", ok);
    json_kerrno(b, step, err);
    buf_add(b, "}", 1);
}

static void probe_write(struct buf *b, const char *path)
{
    json_key(b, "write");
    if (path == NULL)
        buf_adds(b, "null");
    else
        write_try(b, path);
}

/* The tool's own writes where it must be able to write (/state, /out, a HOME under
   /state): a file created and removed in each directory, as the tool's uid. An engine
   whose uid mapping leaves these to another uid is refused before any cell runs. */
static void probe_writable(struct buf *b, const struct probe_opts *o)
{
    json_key(b, "writable");
    buf_add(b, "[", 1);
    for (size_t i = 0; i < o->n_writable; i++) {
        char path[PATH_MAX];
        json_sep(b);
        if (snprintf(path, sizeof path, "%s/.sandbench-probe-writable", o->writable[i])
            >= (int)sizeof path)
            buf_adds(b, "null");
        else
            write_try(b, path);
    }
    buf_add(b, "]", 1);
}

/* Undo the kernel's octal escapes (\040 space, \011 tab, \012 newline, \134 backslash). */
static void unescape_octal(char *s)
{
    char *w = s;
    for (const char *r = s; *r != '\0';) {
        if (r[0] == '\\' && r[1] >= '0' && r[1] <= '3' && r[2] >= '0' && r[2] <= '7'
            && r[3] >= '0' && r[3] <= '7') {
            *w++ = (char)(((r[1] - '0') << 6) | ((r[2] - '0') << 3) | (r[3] - '0'));
            r += 4;
        } else {
            *w++ = *r++;
        }
    }
    *w = '\0';
}

/* One /proc/self/mountinfo line:
     ID PARENT MAJ:MIN ROOT MOUNT_POINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPER_OPTIONS
   Fields are split on single spaces: a source can be empty, which shows as two spaces. */
enum { MOUNT_FIELDS = 64 };

/* The fields of a mountinfo line, unescaped, and the index of its "-" separator; -1 when
   the line is not one. */
static int split_mountinfo(char *line, char *field[MOUNT_FIELDS])
{
    int n = 0, dash = -1;
    for (char *token; n < MOUNT_FIELDS && (token = strsep(&line, " ")) != NULL; n++) {
        field[n] = token;
        if (dash < 0 && n >= 6 && strcmp(token, "-") == 0)
            dash = n;
    }
    if (line != NULL || dash < 0 || n != dash + 4)
        return -1;
    for (int i = 0; i < n; i++)
        unescape_octal(field[i]);
    return dash;
}

static bool mount_entry(struct buf *b, char *line)
{
    char *field[MOUNT_FIELDS];
    int dash = split_mountinfo(line, field);
    if (dash < 0)
        return false;
    json_sep(b);
    buf_add(b, "{", 1);
    json_kstr(b, "mount_point", field[4]);
    json_kstr(b, "fstype", field[dash + 1]);
    json_kstr(b, "source", field[dash + 2]);
    json_kstr(b, "options", field[5]);
    json_kstr(b, "super_options", field[dash + 3]);
    /* The size of the file system behind the mount point, as a writer inside sees it: the
       orchestrator bounds each writable mount and checks the bound from here. */
    struct statvfs st;
    if (statvfs(field[4], &st) == 0)
        json_kuint(b, "size_bytes", (uint64_t)st.f_blocks * st.f_frsize);
    else
        json_knull(b, "size_bytes");
    buf_add(b, "}", 1);
    return true;
}

/* All mounts, or null when the table cannot be read or has a line we cannot parse: the
   orchestrator must not judge the mounts from a partial list. */
static void probe_mounts(struct buf *b)
{
    json_key(b, "mounts");
    FILE *f = fopen("/proc/self/mountinfo", "re");
    if (f == NULL) {
        buf_adds(b, "null");
        return;
    }
    struct buf list = { 0 };
    char *line = NULL;
    size_t size = 0;
    ssize_t len;
    bool ok = true;
    buf_add(&list, "[", 1);
    while (ok && (len = getline(&line, &size, f)) >= 0) {
        if (len > 0 && line[len - 1] == '\n')
            line[len - 1] = '\0';
        ok = mount_entry(&list, line);
    }
    buf_add(&list, "]", 1);
    if (ok && !list.failed)
        buf_add(b, list.data, list.len);
    else
        buf_adds(b, "null");
    buf_free(&list);
    free(line);
    fclose(f);
}

/* The limits the kernel applies to the probe's own cgroup, as their files say: what is in
   force, not what the engine was asked for. Each controller's directory is found from
   /proc/self/cgroup (the cgroup's path) and /proc/self/mountinfo (where that hierarchy is
   mounted, and which of its paths is the mount's root). Inside a cgroup namespace both
   show "/"; without one (docker's default on cgroup v1) the path is the host's, e.g.
   /docker/ID, and the mount's root is that same path: either way the directory is the mount
   point plus what the path adds to the root. A path outside the root has no directory here
   (null): the guards then find no limit. Every file is read with one bounded read. */
enum { CG_MEMORY, CG_PIDS, CG_CPU, CG_CPUSET, CG_V2, CG_COUNT };
static const char *const CG_NAMES[CG_COUNT] = { "memory", "pids", "cpu", "cpuset", "" };

/* Whether NAME is one of the comma-separated words of LIST. */
static bool has_word(const char *list, const char *name)
{
    size_t len = strlen(name);
    for (const char *p = list; p != NULL; p = strchr(p, ',')) {
        p += *p == ',';
        if (strncmp(p, name, len) == 0 && (p[len] == ',' || p[len] == '\0'))
            return true;
    }
    return false;
}

/* The cgroup path of each controller (v1) and of the unified hierarchy (v2, "0::PATH"). */
static void cgroup_paths(char paths[CG_COUNT][PATH_MAX])
{
    FILE *f = fopen("/proc/self/cgroup", "re");
    if (f == NULL)
        return;
    char line[PATH_MAX + 256];
    for (int row = 0; row < 64 && fgets(line, sizeof line, f) != NULL; row++) {
        line[strcspn(line, "\n")] = '\0';
        char *controllers = strchr(line, ':');
        char *path = controllers != NULL ? strchr(controllers + 1, ':') : NULL;
        if (path == NULL)
            continue;
        *path++ = '\0';
        controllers++;
        for (int c = 0; c < CG_COUNT; c++)
            if (c == CG_V2 ? controllers[0] == '\0' : has_word(controllers, CG_NAMES[c]))
                snprintf(paths[c], PATH_MAX, "%s", path);
    }
    fclose(f);
}

/* The directory of PATH in a hierarchy mounted at POINT whose root is ROOT, or "". */
static void cgroup_dir(char *dir, const char *point, const char *root, const char *path)
{
    size_t len = strcmp(root, "/") == 0 ? 0 : strlen(root);
    dir[0] = '\0';
    if (path[0] == '/' && strncmp(path, root, len) == 0
        && (path[len] == '/' || path[len] == '\0'))
        snprintf(dir, PATH_MAX, "%s%s", point, strcmp(path + len, "/") == 0 ? "" : path + len);
}

/* Each controller's directory: a v1 hierarchy carrying it, else the unified one. */
static void cgroup_dirs(char dirs[CG_COUNT][PATH_MAX], char paths[CG_COUNT][PATH_MAX])
{
    FILE *f = fopen("/proc/self/mountinfo", "re");
    if (f == NULL)
        return;
    char *line = NULL, *field[MOUNT_FIELDS];
    size_t size = 0;
    for (int row = 0; row < 4096 && getline(&line, &size, f) >= 0; row++) {
        line[strcspn(line, "\n")] = '\0';
        int dash = split_mountinfo(line, field);
        if (dash < 0)
            continue;
        const char *type = field[dash + 1], *options = field[dash + 3];
        for (int c = 0; c < CG_COUNT; c++) {
            bool v1 = c != CG_V2 && strcmp(type, "cgroup") == 0 && has_word(options, CG_NAMES[c]);
            bool v2 = c == CG_V2 && strcmp(type, "cgroup2") == 0;
            if ((v1 || v2) && dirs[c][0] == '\0' && paths[c][0] != '\0')
                cgroup_dir(dirs[c], field[4], field[3], paths[c]);
        }
    }
    free(line);
    fclose(f);
}

/* KEY: the first line of DIR/NAME (at most 255 bytes), or null when it cannot be read. */
static void json_kfile(struct buf *b, const char *key, const char *dir, const char *name)
{
    char path[PATH_MAX], text[256];
    int fd = -1;
    if (dir[0] != '\0' && snprintf(path, sizeof path, "%s/%s", dir, name) < (int)sizeof path)
        fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    ssize_t n = fd >= 0 ? read(fd, text, sizeof text - 1) : -1;
    if (fd >= 0)
        close(fd);
    if (n < 0) {
        json_knull(b, key);
        return;
    }
    text[n] = '\0';
    text[strcspn(text, "\n")] = '\0';
    json_kstr(b, key, text);
}

/* MemTotal of /proc/meminfo in kB: under gVisor the sandbox kernel's own memory, which
   runsc sizes from the memory limit of the container's cgroup. */
static void probe_meminfo(struct buf *b)
{
    FILE *f = fopen("/proc/meminfo", "re");
    char line[256];
    uint64_t kb = 0;
    bool found = false;
    for (int row = 0; f != NULL && !found && row < 64 && fgets(line, sizeof line, f); row++)
        found = sscanf(line, "MemTotal: %" SCNu64 " kB", &kb) == 1;
    if (f != NULL)
        fclose(f);
    if (found)
        json_kuint(b, "meminfo_total_kb", kb);
    else
        json_knull(b, "meminfo_total_kb");
}

static void probe_cgroup(struct buf *b)
{
    static char paths[CG_COUNT][PATH_MAX], dirs[CG_COUNT][PATH_MAX];
    memset(paths, 0, sizeof paths);
    memset(dirs, 0, sizeof dirs);
    cgroup_paths(paths);
    cgroup_dirs(dirs, paths);
    json_key(b, "cgroup");
    buf_add(b, "{", 1);
    /* v1 when a v1 hierarchy carries the memory controller, else v2 (cgroup2). */
    bool v1 = dirs[CG_MEMORY][0] != '\0' || dirs[CG_V2][0] == '\0';
    json_kstr(b, "version", v1 ? "v1" : "v2");
    json_key(b, "dirs");
    buf_add(b, "{", 1);
    for (int c = 0; c < CG_COUNT; c++)
        if (v1 != (c == CG_V2))
            json_kstr(b, c == CG_V2 ? "unified" : CG_NAMES[c], dirs[c][0] ? dirs[c] : NULL);
    buf_add(b, "}", 1);
    if (v1) {
        json_kfile(b, "memory_max", dirs[CG_MEMORY], "memory.limit_in_bytes");
        json_kfile(b, "pids_max", dirs[CG_PIDS], "pids.max");
        json_kfile(b, "cpu_quota", dirs[CG_CPU], "cpu.cfs_quota_us");
        json_kfile(b, "cpu_period", dirs[CG_CPU], "cpu.cfs_period_us");
        json_kfile(b, "cpuset", dirs[CG_CPUSET], "cpuset.effective_cpus");
        json_kfile(b, "cpuset_cpus", dirs[CG_CPUSET], "cpuset.cpus");
    } else {
        json_kfile(b, "memory_max", dirs[CG_V2], "memory.max");
        json_kfile(b, "pids_max", dirs[CG_V2], "pids.max");
        json_kfile(b, "cpu_max", dirs[CG_V2], "cpu.max");
        json_kfile(b, "cpuset", dirs[CG_V2], "cpuset.cpus.effective");
    }
    probe_meminfo(b);
    buf_add(b, "}", 1);
}

/* Files named like the helper that the image itself carries: at its old place and in every
   directory of PATH. Arm images carry no helper (sandbench mounts its own from the host),
   so one found here is a stale image or one meant to be mistaken for the real helper. */
static void probe_image_helpers(struct buf *b)
{
    static const char name[] = "sandbench-exec";
    json_key(b, "image_helpers");
    buf_add(b, "[", 1);
    const char *path = getenv("PATH");
    char dirs[4096];
    snprintf(dirs, sizeof dirs, "/usr/local/bin:%s", path != NULL ? path : "");
    struct buf seen = { 0 };
    char *rest = dirs;
    for (char *dir; (dir = strsep(&rest, ":")) != NULL;) {
        char file[PATH_MAX], key[PATH_MAX + 2];
        struct stat st;
        if (dir[0] != '/' || snprintf(file, sizeof file, "%s/%s", dir, name)
            >= (int)sizeof file || lstat(file, &st) < 0)
            continue;
        snprintf(key, sizeof key, "\n%s\n", file);
        if (seen.len > 0 && memmem(seen.data, seen.len, key, strlen(key)) != NULL)
            continue;
        buf_add(&seen, key, strlen(key));
        json_sep(b);
        json_str(b, file);
    }
    buf_free(&seen);
    buf_add(b, "]", 1);
}

/* Whether a process of the sandbox's uid can open PID 1's stdin or stdout through /proc:
   under `serve` those are the exec channel. PID 1 is non-dumpable, so every try must fail. */
static void probe_pid1_fds(struct buf *b)
{
    static const struct { const char *key, *path; int flags; } tries[] = {
        { "stdin_write", "/proc/1/fd/0", O_WRONLY },
        { "stdin_read", "/proc/1/fd/0", O_RDONLY },
        { "stdout_write", "/proc/1/fd/1", O_WRONLY },
        { "stdout_read", "/proc/1/fd/1", O_RDONLY },
    };
    json_key(b, "pid1_fds");
    buf_add(b, "{", 1);
    for (size_t i = 0; i < sizeof tries / sizeof tries[0]; i++) {
        int fd = open(tries[i].path, tries[i].flags | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
        if (fd >= 0) {
            close(fd);
            json_kstr(b, tries[i].key, "opened");
        } else {
            char why[200];
            format_errno(why, sizeof why, "open", errno);
            json_kstr(b, tries[i].key, why);
        }
    }
    buf_add(b, "}", 1);
}

/* What the tool's uid can do to the executor: PID 1's ids and capability sets (its status is
   world-readable), whether a signal would reach it (kill with signal 0 checks permission and
   sends nothing), whether its environment reads back as anything but zeros, and which of its
   descriptors open. A listing of /proc/1/fd refused (EACCES under runc) leaves 0 to 15 to
   try by number. Every open is O_NONBLOCK and closed at once: nothing is read or written. */
static void probe_pid1(struct buf *b)
{
    char why[200];
    probe_status(b, "pid1_status", "/proc/1/status", true);

    json_key(b, "pid1_signal");
    if (kill(1, 0) == 0) {
        json_str(b, "permitted");
    } else {
        format_errno(why, sizeof why, "kill", errno);
        json_str(b, why);
    }

    json_key(b, "pid1_environ");
    int fd = open("/proc/1/environ", O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        format_errno(why, sizeof why, "open", errno);
        json_str(b, why);
    } else {
        static char env[65536];
        size_t total = 0, nonzero = 0;
        ssize_t n;
        while (total < (1u << 20) && (n = read(fd, env, sizeof env)) > 0) {
            total += (size_t)n;
            for (ssize_t i = 0; i < n; i++)
                nonzero += env[i] != '\0';
        }
        close(fd);
        buf_printf(b, "\"%zu bytes read, %zu not zero\"", total, nonzero);
    }

    json_key(b, "pid1_fd_opens");
    buf_add(b, "{", 1);
    int numbers[256], count = 0;
    DIR *dir = opendir("/proc/1/fd");
    json_key(b, "listing");
    if (dir == NULL) {
        format_errno(why, sizeof why, "opendir", errno);
        json_str(b, why);
        for (; count < 16; count++)
            numbers[count] = count;
    } else {
        json_str(b, "listed");
        for (struct dirent *e; count < 256 && (e = readdir(dir)) != NULL;) {
            uint64_t number;
            if (parse_u64(e->d_name, INT_MAX, &number))
                numbers[count++] = (int)number;
        }
        closedir(dir);
    }
    json_kuint(b, "tried", (uint64_t)count);
    json_key(b, "opened");
    buf_add(b, "[", 1);
    for (int i = 0; i < count; i++) {
        static const struct { int flags; const char *mode; } modes[] = {
            { O_RDONLY, "read" }, { O_WRONLY, "write" },
        };
        for (size_t m = 0; m < 2; m++) {
            char path[64];
            snprintf(path, sizeof path, "/proc/1/fd/%d", numbers[i]);
            int opened = open(path, modes[m].flags | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
            if (opened >= 0) {
                close(opened);
                json_sep(b);
                buf_printf(b, "\"%d %s\"", numbers[i], modes[m].mode);
            }
        }
    }
    buf_add(b, "]}", 2);
}

static int cmd_probe(int argc, char **argv)
{
    struct probe_opts o;
    int rc = parse_probe_args(argc, argv, &o);
    if (rc != 0)
        return rc;
    /* Every fact is the tool's view: the probe takes the tool's ids first, all three uids. */
    if (!tool_ids_required(&o.ids, "probe") || !become_runner(&o.ids))
        return EXIT_NO_RESULT;
    if (!become_tool(&o.ids)) {
        char why[160];
        format_errno(why, sizeof why, "setresuid", errno);
        helper_error("cannot take the tool's uid: %s", why);
        return EXIT_NO_RESULT;
    }
    struct buf b = { 0 };
    buf_add(&b, "{", 1);
    json_kstr(&b, "helper_version", HELPER_VERSION);
    probe_ids(&b);
    probe_status(&b, "status", "/proc/self/status", false);
    /* The flag as the kernel applies it, also where its status has no NoNewPrivs line. */
    json_kint(&b, "no_new_privs", prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0));
    probe_interfaces(&b);
    probe_lines(&b, "routes_v4", "/proc/net/route", true);
    probe_lines(&b, "routes_v6", "/proc/net/ipv6_route", false);
    probe_lookup(&b, o.lookup, o.nameserver);
    probe_network(&b, &o);
    probe_write(&b, o.write);
    probe_writable(&b, &o);
    probe_mounts(&b);
    probe_cgroup(&b);
    probe_image_helpers(&b);
    probe_pid1_fds(&b);
    probe_pid1(&b);
    buf_add(&b, "}", 1);
    bool sent = false;
    if (b.failed)
        helper_error("out of memory while writing the probe report");
    else
        sent = emit_frame('p', b.data, b.len);
    buf_free(&b);
    return sent ? 0 : EXIT_NO_RESULT;
}

/* ------------------------------------------------------------------------------------- */
/* idle: the container's PID 1: reaps orphans, handles no signal                         */

static int cmd_idle(int argc, char **argv)
{
    (void)argv;
    if (argc != 2)
        return usage_error("idle takes no arguments");
    if (!scrub_environment() || prctl(PR_SET_DUMPABLE, 0) < 0) {
        char why[160];
        format_errno(why, sizeof why, "scrub environment or prctl(PR_SET_DUMPABLE)", errno);
        helper_error("%s", why);
        return EXIT_NO_RESULT;
    }
    /* As the container's PID 1 this process installs no signal handler at all: the kernel
       then drops every signal sent to it from inside its pid namespace, so a tool running
       as the same uid can neither kill nor stop it (and with it the container). From
       outside, the engine's SIGKILL and SIGTERM still end it. SIGCHLD is blocked only to
       be waited for: every orphan that reparents here is reaped. */
    sigset_t chld;
    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    sigprocmask(SIG_BLOCK, &chld, NULL);
    for (;;) {
        siginfo_t info;
        if (sigwaitinfo(&chld, &info) < 0 && errno != EINTR)
            continue;
        while (waitpid(-1, NULL, WNOHANG) > 0)
            continue;
    }
}

/* ------------------------------------------------------------------------------------- */
/* serve: the container's PID 1, running each request it reads on stdin                  */

#define REQUEST_MAX (1u << 20)
#define REQUEST_ARGS_MAX 4096

/* 1 when all `len` bytes were read, 0 at end of input, -1 on an error or a short read. */
static int read_exact(int fd, void *into, size_t len)
{
    size_t got = 0;
    while (got < len) {
        ssize_t n = read(fd, (char *)into + got, len - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return n == 0 && got == 0 ? 0 : -1;
        got += (size_t)n;
    }
    return 1;
}

/* The request's NUL-ended arguments as argv (argv[0] is this program), or a reason. */
static const char *split_request(char *payload, size_t len, char **argv, int *argc)
{
    if (len == 0 || payload[len - 1] != '\0')
        return "a request's arguments must each end with NUL";
    *argc = 1;
    for (size_t at = 0; at < len; at += strlen(payload + at) + 1) {
        if (*argc >= REQUEST_ARGS_MAX)
            return "too many arguments in one request";
        argv[(*argc)++] = payload + at;
    }
    argv[*argc] = NULL;
    if (strcmp(argv[1], "run") != 0 && strcmp(argv[1], "probe") != 0)
        return "a request runs `run` or `probe`";
    return NULL;
}

/* In the forked runner: the request runs as under docker exec, its frames into the pipe. */
__attribute__((noreturn))
static void serve_runner(int frames_w, int sigfd, int argc, char **argv)
{
    close(sigfd);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (null < 0 || dup2(null, STDIN_FILENO) < 0 || dup2(frames_w, STDOUT_FILENO) < 0)
        _exit(EXIT_NO_RESULT);
    close(null);
    close(frames_w);
    g_served = true;
    _exit(strcmp(argv[1], "run") == 0 ? cmd_run(argc, argv) : cmd_probe(argc, argv));
}

/* Reap every child that has exited, as `idle` does on each SIGCHLD: orphans that
   reparented here, and the runner (whose status is kept when `runner` is given). */
static void serve_reap(int sigfd, pid_t runner, bool *runner_done, int *status)
{
    struct signalfd_siginfo info;
    while (read(sigfd, &info, sizeof info) > 0)
        continue;
    int st;
    pid_t pid;
    while ((pid = waitpid(-1, &st, WNOHANG)) > 0) {
        if (runner > 0 && pid == runner) {
            *status = st;
            *runner_done = true;
        }
    }
}

/* Relay the runner's frame stream in 'c' frames until it closes, reaping orphans as they
   die, then wait for the runner itself and end the answer with 'z'. */
static void serve_answer(pid_t runner, int frames_r, int sigfd)
{
    static char chunk[CHUNK_MAX];
    bool done = false;
    int status = 0;
    while (frames_r >= 0) {
        struct pollfd fds[2] = {
            { .fd = frames_r, .events = POLLIN },
            { .fd = sigfd, .events = POLLIN },
        };
        if (poll(fds, 2, -1) < 0 && errno != EINTR)
            break;
        if (fds[1].revents)
            serve_reap(sigfd, runner, &done, &status);
        if (fds[0].revents) {
            ssize_t n = read(frames_r, chunk, sizeof chunk);
            if (n > 0)
                emit_frame('c', chunk, (size_t)n); /* a reader gone: keep draining */
            else if (n == 0 || errno != EINTR)
                close_fd(&frames_r);
        }
    }
    close_fd(&frames_r);
    while (!done) {
        int st;
        pid_t pid = waitpid(runner, &st, 0);
        if (pid == runner) {
            status = st;
            done = true;
        } else if (pid < 0 && errno != EINTR) {
            break;
        }
    }
    char end[32];
    if (WIFSIGNALED(status))
        snprintf(end, sizeof end, "signal %d", WTERMSIG(status));
    else
        snprintf(end, sizeof end, "exit %d", WEXITSTATUS(status));
    emit_frame('z', end, strlen(end));
}

/* The request channel is PID 1's stdin and its answers PID 1's stdout, both the engine's
   attach stream. A tool cannot reach them: it runs as another uid than PID 1 (see the
   header), PID 1 is non-dumpable besides, and the runner hands the tool none of these
   descriptors; the frames pipe is PID 1's (uid 0, mode 0600). As in `idle`, no signal handler is installed, so nothing inside can
   signal PID 1; SIGCHLD is blocked only to be read, and every orphan is reaped as it dies,
   while a runner runs and between requests. One request at a time; a malformed one ends the helper, and with it the
   container, since the stream can no longer be trusted to be in step. */
static int cmd_serve(int argc, char **argv)
{
    (void)argv;
    if (argc != 2)
        return usage_error("serve takes no arguments");
    if (getpid() != 1) {
        helper_error("serve: refused: runs only as the PID 1 of a container's pid namespace");
        return EXIT_NO_RESULT;
    }
    if (!scrub_environment() || prctl(PR_SET_DUMPABLE, 0) < 0) {
        char why[160];
        format_errno(why, sizeof why, "scrub environment or prctl(PR_SET_DUMPABLE)", errno);
        helper_error("%s", why);
        return EXIT_NO_RESULT;
    }
    sigset_t chld;
    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    int sigfd = -1;
    if (sigprocmask(SIG_BLOCK, &chld, NULL) < 0
        || (sigfd = signalfd(-1, &chld, SFD_NONBLOCK | SFD_CLOEXEC)) < 0) {
        char why[160];
        format_errno(why, sizeof why, "signalfd", errno);
        helper_error("%s", why);
        return EXIT_NO_RESULT;
    }
    static char payload[REQUEST_MAX];
    static char *args[REQUEST_ARGS_MAX + 1];
    for (;;) {
        /* Between requests too, orphans are reaped as they die. */
        struct pollfd wait[2] = {
            { .fd = STDIN_FILENO, .events = POLLIN },
            { .fd = sigfd, .events = POLLIN },
        };
        if (poll(wait, 2, -1) < 0 && errno != EINTR)
            return EXIT_NO_RESULT;
        bool unused = false;
        int ignored = 0;
        if (wait[1].revents)
            serve_reap(sigfd, 0, &unused, &ignored);
        if (!wait[0].revents)
            continue;
        unsigned char header[5];
        int got = read_exact(STDIN_FILENO, header, sizeof header);
        if (got == 0)
            return 0; /* the orchestrator closed the channel */
        uint32_t len = (uint32_t)header[1] << 24 | (uint32_t)header[2] << 16
            | (uint32_t)header[3] << 8 | header[4];
        if (got < 0 || header[0] != 'q' || len > REQUEST_MAX
            || read_exact(STDIN_FILENO, payload, len) != 1) {
            helper_error("serve: a malformed request on stdin; the channel is closed");
            return EXIT_NO_RESULT;
        }
        int args_n = 0;
        const char *bad = split_request(payload, len, args, &args_n);
        if (bad != NULL) {
            helper_error("serve: %s; the channel is closed", bad);
            return EXIT_NO_RESULT;
        }
        args[0] = argv[0];
        int frames[2];
        if (pipe2(frames, O_CLOEXEC) < 0) {
            char why[160];
            format_errno(why, sizeof why, "pipe2", errno);
            helper_error("serve: %s", why);
            emit_frame('z', "exit 125", 8);
            continue;
        }
        pid_t runner = fork();
        if (runner == 0) {
            close(frames[0]);
            serve_runner(frames[1], sigfd, args_n, args);
        }
        close(frames[1]);
        if (runner < 0) {
            char why[160];
            format_errno(why, sizeof why, "fork", errno);
            close(frames[0]);
            helper_error("serve: %s", why);
            emit_frame('z', "exit 125", 8);
            continue;
        }
        serve_answer(runner, frames[0], sigfd);
    }
}

/* ------------------------------------------------------------------------------------- */

int main(int argc, char **argv)
{
    ensure_std_fds();
    /* A reader that goes away must show up as EPIPE on write, so that the helper can still
       kill the tool's processes on the way out, rather than as a silent death. */
    signal(SIGPIPE, SIG_IGN);

    if (argc < 2)
        return usage_error("missing command");
    const char *cmd = argv[1];
    if (strcmp(cmd, "--version") == 0 && argc == 2) {
        printf("sandbench-exec %s\n", HELPER_VERSION);
        return fflush(stdout) == 0 ? 0 : 1;
    }
    if (strcmp(cmd, "run") == 0)
        return cmd_run(argc, argv);
    if (strcmp(cmd, "probe") == 0)
        return cmd_probe(argc, argv);
    if (strcmp(cmd, "idle") == 0)
        return cmd_idle(argc, argv);
    if (strcmp(cmd, "serve") == 0)
        return cmd_serve(argc, argv);
    return usage_error("unknown command '%s'", cmd);
}
