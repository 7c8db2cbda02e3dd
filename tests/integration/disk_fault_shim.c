/* LD_PRELOAD shim for tests/integration/disk_faults_test.py: a failing disk, as the broker sees one.
 *
 * $SLUICE_TEST_DISK_FAULTS names a control file. While it exists, each of its lines "<call> <path part>" makes
 * that call fail with EIO on every file whose path contains <path part>:
 *   fsync  fsync(2)/fdatasync(2), after a real sync (as a kernel that lost a write reports it);
 *   read   read(2)/pread(2) (the device cannot read the file);
 *   rename rename(2), matched on the old path.
 * e.g. "fsync /" fails every fsync. Without the variable, or while the file is absent, every call passes through.
 * The control file is read with raw system calls, so that reading it never goes through the wrappers. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

/* Whether a line "<call> <part>" of the control file has `call` and a part of `path`. */
static int fault_for(const char* call, const char* path) {
  const char* control = getenv("SLUICE_TEST_DISK_FAULTS");
  if (control == NULL || control[0] == '\0') return 0;
  const int fd = (int)syscall(SYS_openat, AT_FDCWD, control, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  char text[4096];
  const long n = syscall(SYS_read, fd, text, sizeof text - 1);
  syscall(SYS_close, fd);
  if (n <= 0) return 0;
  text[n] = '\0';
  const size_t call_len = strlen(call);
  char* save = NULL;
  for (char* line = strtok_r(text, "\n", &save); line != NULL; line = strtok_r(NULL, "\n", &save)) {
    if (strncmp(line, call, call_len) == 0 && line[call_len] == ' ' && line[call_len + 1] != '\0' &&
        strstr(path, line + call_len + 1) != NULL) {
      return 1;
    }
  }
  return 0;
}

static int fault_for_fd(const char* call, int fd) {
  const char* control = getenv("SLUICE_TEST_DISK_FAULTS");
  if (control == NULL || control[0] == '\0' || access(control, F_OK) != 0) return 0;
  char link[64];
  char path[4096];
  snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  const ssize_t len = readlink(link, path, sizeof path - 1);
  if (len <= 0) return 0;
  path[len] = '\0';
  return fault_for(call, path);
}

/* The next definition of `name` (libc's), looked up once: REAL(fsync, int, (int)) declares real_fsync. */
#define REAL(name, ret, params) \
  static ret(*real_##name) params = NULL; \
  if (real_##name == NULL) real_##name = (ret(*) params)dlsym(RTLD_NEXT, #name)

static int synced_then_failed(int r, int fd) {
  if (r == 0 && fault_for_fd("fsync", fd)) {
    errno = EIO;
    return -1;
  }
  return r;
}

int fsync(int fd) {
  REAL(fsync, int, (int));
  return synced_then_failed(real_fsync(fd), fd);
}

int fdatasync(int fd) {
  REAL(fdatasync, int, (int));
  return synced_then_failed(real_fdatasync(fd), fd);
}

ssize_t read(int fd, void* buf, size_t count) {
  REAL(read, ssize_t, (int, void*, size_t));
  if (fault_for_fd("read", fd)) {
    errno = EIO;
    return -1;
  }
  return real_read(fd, buf, count);
}

ssize_t pread(int fd, void* buf, size_t count, off_t offset) {
  REAL(pread, ssize_t, (int, void*, size_t, off_t));
  if (fault_for_fd("read", fd)) {
    errno = EIO;
    return -1;
  }
  return real_pread(fd, buf, count, offset);
}

ssize_t pread64(int fd, void* buf, size_t count, off_t offset) {
  REAL(pread64, ssize_t, (int, void*, size_t, off_t));
  if (fault_for_fd("read", fd)) {
    errno = EIO;
    return -1;
  }
  return real_pread64(fd, buf, count, offset);
}

int rename(const char* from, const char* to) {
  REAL(rename, int, (const char*, const char*));
  if (fault_for("rename", from)) {
    errno = EIO;
    return -1;
  }
  return real_rename(from, to);
}
