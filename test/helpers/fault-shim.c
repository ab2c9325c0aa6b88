/*
 * TEST-ONLY storage fault injection below LMDB: an LD_PRELOAD library that makes the
 * write and sync calls on chosen files fail with a chosen errno, as a failing device
 * would. It reaches every thread of the process, lmdb-js's own write thread included,
 * which the JavaScript hook (src/testing/faults.ts) cannot.
 *
 * The rule is read from the file named by CAIRN_FAULT_SHIM (re-read when it changes), so a
 * test turns a fault on and off while the node runs:
 *   "EIO ledger.mdb"      every write/sync of a file whose path contains "ledger.mdb" fails with EIO
 *   "ENOSPC pending.mdb"  the same with ENOSPC
 *   ""                    (empty or missing file) no fault
 * Options after the file name make a transient fault, as a device that fails once would:
 *   "EIO ledger.mdb count=1 call=pwrite skip=3"
 *     count=N  only the next N matching calls fail, then none (absent: every one)
 *     call=C   only calls of this kind match: pwrite (pwrite, pwrite64), pwritev, write,
 *              writev, sync (fsync, fdatasync) (absent: every kind)
 *     skip=N   the first N matching calls after the rule was set pass
 *     below=N  only writes at a file offset under N match (below=8192: LMDB's two meta pages,
 *              with 4-KiB pages); from=N only writes at N or past it (its data pages); a call
 *              without an offset (write, writev, a sync) never matches either
 * Each failed call appends a line "<errno> <call> <fd> <offset, -1 for none>" to the control file's name with
 * ".fired" added, so a test knows the fault was met (and how often).
 * Built by test/helpers/fault-shim.ts with the system C compiler.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

static int rule_errno = 0;
static char rule_file[256];
static char rule_call[16];
/* Whether only `count=` calls fail; the calls still to fail then; the calls still to let pass (skip=). */
static int rule_counted = 0;
static long rule_left = 0;
static long rule_skip = 0;
/* Offsets a write must be in to match: [rule_from, rule_below); -1 when not limited. */
static long long rule_from = -1;
static long long rule_below = -1;
static struct timespec rule_mtime;
static off_t rule_size = -1;

static pthread_mutex_t rule_lock = PTHREAD_MUTEX_INITIALIZER;

static void load_rule_locked(void) {
  const char *ctl = getenv("CAIRN_FAULT_SHIM");
  struct stat st;
  if (!ctl || stat(ctl, &st) != 0) {
    rule_errno = 0;
    rule_size = -1;
    return;
  }
  if (st.st_mtim.tv_sec == rule_mtime.tv_sec && st.st_mtim.tv_nsec == rule_mtime.tv_nsec && st.st_size == rule_size) return;
  rule_mtime = st.st_mtim;
  rule_size = st.st_size;
  rule_errno = 0;
  FILE *f = fopen(ctl, "r");
  if (!f) return;
  char code[32] = {0};
  char file[256] = {0};
  char opt[64];
  long left = -1, skip = 0;  /* -1: no count= given */
  long long from = -1, below = -1;
  char call[16] = {0};
  if (fscanf(f, "%31s %255s", code, file) == 2) {
    while (fscanf(f, "%63s", opt) == 1) {
      if (strncmp(opt, "count=", 6) == 0) left = strtol(opt + 6, NULL, 10);
      else if (strncmp(opt, "skip=", 5) == 0) skip = strtol(opt + 5, NULL, 10);
      else if (strncmp(opt, "from=", 5) == 0) from = strtoll(opt + 5, NULL, 10);
      else if (strncmp(opt, "below=", 6) == 0) below = strtoll(opt + 6, NULL, 10);
      else if (strncmp(opt, "call=", 5) == 0) snprintf(call, sizeof call, "%.15s", opt + 5);
    }
    memcpy(rule_file, file, sizeof rule_file);
    memcpy(rule_call, call, sizeof rule_call);
    rule_counted = left >= 0;
    rule_from = from;
    rule_below = below;
    __atomic_store_n(&rule_left, left, __ATOMIC_SEQ_CST);
    __atomic_store_n(&rule_skip, skip, __ATOMIC_SEQ_CST);
    if (strcmp(code, "EIO") == 0) rule_errno = EIO;
    else if (strcmp(code, "ENOSPC") == 0) rule_errno = ENOSPC;
  }
  fclose(f);
}

/* One thread at a time: two threads that both saw the rule change would both reset the counters. */
static void load_rule(void) {
  pthread_mutex_lock(&rule_lock);
  load_rule_locked();
  pthread_mutex_unlock(&rule_lock);
}

/* Notes a failed call beside the control file (CAIRN_FAULT_SHIM + ".fired"). */
static void note_fired(int e, const char *call, int fd, long long off) {
  const char *ctl = getenv("CAIRN_FAULT_SHIM");
  char path[PATH_MAX];
  if (!ctl || snprintf(path, sizeof path, "%s.fired", ctl) >= (int)sizeof path) return;
  int out = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (out < 0) return;
  dprintf(out, "%d %s %d %lld\n", e, call, fd, off);
  close(out);
}

/* The errno to fail a call of kind `call` on `fd` at `off` (-1: a call without an offset) with, or 0. */
static int fault_for(int fd, const char *call, long long off) {
  load_rule();
  if (!rule_errno || fd < 0) return 0;
  if (rule_call[0] && strcmp(rule_call, call) != 0) return 0;
  if ((rule_from >= 0 || rule_below >= 0) && (off < 0 || (rule_from >= 0 && off < rule_from) || (rule_below >= 0 && off >= rule_below))) return 0;
  char link[64];
  char rule_path[PATH_MAX];
  snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  ssize_t n = readlink(link, rule_path, sizeof rule_path - 1);
  if (n <= 0) return 0;
  rule_path[n] = 0;
  if (!strstr(rule_path, rule_file)) return 0;
  /* Transient rules: let `skip` calls pass, then fail `count` (the counters are shared by
     every thread, so exactly that many fail however the calls interleave). */
  if (__atomic_load_n(&rule_skip, __ATOMIC_SEQ_CST) > 0 && __atomic_fetch_sub(&rule_skip, 1, __ATOMIC_SEQ_CST) > 0) return 0;
  if (rule_counted && (__atomic_load_n(&rule_left, __ATOMIC_SEQ_CST) <= 0 || __atomic_fetch_sub(&rule_left, 1, __ATOMIC_SEQ_CST) <= 0)) return 0;
  note_fired(rule_errno, call, fd, off);
  return rule_errno;
}

#define REAL(name) static __typeof__(name) *real_##name; if (!real_##name) real_##name = (__typeof__(name) *)dlsym(RTLD_NEXT, #name)
#define FAIL_IF(fd, call, off) do { int e_ = fault_for(fd, call, off); if (e_) { errno = e_; return -1; } } while (0)

ssize_t pwrite(int fd, const void *buf, size_t n, off_t off) {
  REAL(pwrite);
  FAIL_IF(fd, "pwrite", (long long)off);
  return real_pwrite(fd, buf, n, off);
}
ssize_t pwrite64(int fd, const void *buf, size_t n, off_t off) {
  REAL(pwrite64);
  FAIL_IF(fd, "pwrite", (long long)off);
  return real_pwrite64(fd, buf, n, off);
}
ssize_t pwritev(int fd, const struct iovec *iov, int cnt, off_t off) {
  REAL(pwritev);
  FAIL_IF(fd, "pwritev", (long long)off);
  return real_pwritev(fd, iov, cnt, off);
}
ssize_t pwritev64(int fd, const struct iovec *iov, int cnt, off_t off) {
  REAL(pwritev64);
  FAIL_IF(fd, "pwritev", (long long)off);
  return real_pwritev64(fd, iov, cnt, off);
}
ssize_t write(int fd, const void *buf, size_t n) {
  REAL(write);
  if (fd > 2) FAIL_IF(fd, "write", -1);
  return real_write(fd, buf, n);
}
ssize_t writev(int fd, const struct iovec *iov, int cnt) {
  REAL(writev);
  if (fd > 2) FAIL_IF(fd, "writev", -1);
  return real_writev(fd, iov, cnt);
}
int fsync(int fd) {
  REAL(fsync);
  FAIL_IF(fd, "sync", -1);
  return real_fsync(fd);
}
int fdatasync(int fd) {
  REAL(fdatasync);
  FAIL_IF(fd, "sync", -1);
  return real_fdatasync(fd);
}
