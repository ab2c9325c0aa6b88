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
 * Built by test/helpers/fault-shim.ts with the system C compiler.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
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
static struct timespec rule_mtime;
static off_t rule_size = -1;

static void load_rule(void) {
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
  if (fscanf(f, "%31s %255s", code, file) == 2) {
    if (strcmp(code, "EIO") == 0) rule_errno = EIO;
    else if (strcmp(code, "ENOSPC") == 0) rule_errno = ENOSPC;
    memcpy(rule_file, file, sizeof rule_file);
  }
  fclose(f);
}

/* The errno to fail a call on `fd` with, or 0. */
static int fault_for(int fd) {
  load_rule();
  if (!rule_errno || fd < 0) return 0;
  char link[64];
  char rule_path[PATH_MAX];
  snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  ssize_t n = readlink(link, rule_path, sizeof rule_path - 1);
  if (n <= 0) return 0;
  rule_path[n] = 0;
  return strstr(rule_path, rule_file) ? rule_errno : 0;
}

#define REAL(name) static __typeof__(name) *real_##name; if (!real_##name) real_##name = (__typeof__(name) *)dlsym(RTLD_NEXT, #name)
#define FAIL_IF(fd) do { int e_ = fault_for(fd); if (e_) { errno = e_; return -1; } } while (0)

ssize_t pwrite(int fd, const void *buf, size_t n, off_t off) {
  REAL(pwrite);
  FAIL_IF(fd);
  return real_pwrite(fd, buf, n, off);
}
ssize_t pwrite64(int fd, const void *buf, size_t n, off_t off) {
  REAL(pwrite64);
  FAIL_IF(fd);
  return real_pwrite64(fd, buf, n, off);
}
ssize_t pwritev(int fd, const struct iovec *iov, int cnt, off_t off) {
  REAL(pwritev);
  FAIL_IF(fd);
  return real_pwritev(fd, iov, cnt, off);
}
ssize_t pwritev64(int fd, const struct iovec *iov, int cnt, off_t off) {
  REAL(pwritev64);
  FAIL_IF(fd);
  return real_pwritev64(fd, iov, cnt, off);
}
ssize_t write(int fd, const void *buf, size_t n) {
  REAL(write);
  if (fd > 2) FAIL_IF(fd);
  return real_write(fd, buf, n);
}
ssize_t writev(int fd, const struct iovec *iov, int cnt) {
  REAL(writev);
  if (fd > 2) FAIL_IF(fd);
  return real_writev(fd, iov, cnt);
}
int fsync(int fd) {
  REAL(fsync);
  FAIL_IF(fd);
  return real_fsync(fd);
}
int fdatasync(int fd) {
  REAL(fdatasync);
  FAIL_IF(fd);
  return real_fdatasync(fd);
}
