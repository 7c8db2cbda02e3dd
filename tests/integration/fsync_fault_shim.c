/* LD_PRELOAD shim for tests/integration/disk_faults_test.py: a failing disk, as the broker sees one. While the
 * file named by $SLUICE_TEST_FSYNC_FAIL_FILE exists, fsync(2) and fdatasync(2) fail with EIO (after a real sync,
 * as a kernel that lost a write reports it). Without the variable, or while the file is absent, both pass through. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

static int failing(void) {
  const char* trigger = getenv("SLUICE_TEST_FSYNC_FAIL_FILE");
  return trigger != NULL && trigger[0] != '\0' && access(trigger, F_OK) == 0;
}

static int fail_after(int (*real)(int), int fd) {
  int r = real != NULL ? real(fd) : 0;
  if (r == 0 && failing()) {
    errno = EIO;
    return -1;
  }
  return r;
}

int fsync(int fd) {
  static int (*real)(int) = NULL;
  if (real == NULL) real = (int (*)(int))dlsym(RTLD_NEXT, "fsync");
  return fail_after(real, fd);
}

int fdatasync(int fd) {
  static int (*real)(int) = NULL;
  if (real == NULL) real = (int (*)(int))dlsym(RTLD_NEXT, "fdatasync");
  return fail_after(real, fd);
}
