/* Thread sanitizer builds only (SLUICE_SANITIZE=thread; tests/integration/CMakeLists.txt, target sluice_rdkafka).
 *
 * librdkafka starts its threads with C11 thrd_create. glibc implements it without going through pthread_create,
 * and the TSan runtimes of Debian 12 (GCC 12's libtsan, clang 14's) intercept only pthread_create: a thread started
 * by thrd_create has no TSan state and crashes on its first intercepted call (librdkafka's broker threads, in
 * getaddrinfo). This definition, linked into each test program that loads librdkafka, takes the place of glibc's
 * for librdkafka and starts the thread with pthread_create, so TSan sees it.
 *
 * Suppressions: librdkafka is not built with TSan, so the happens-before of its own atomics and locks is invisible
 * and TSan reports races between its threads (74 in one idempotence_test run, every one inside librdkafka's
 * allocations). They are the client's, in the test program; the broker, the program under test, runs without
 * them. The ZooKeeper client's line is repeated here because this definition replaces the weak one of
 * coordination/zk/zk_c_client.cc in a program that links both.
 *
 * Same contract as glibc's: thrd_t is a pthread_t, the start function's int result becomes the thread's exit value
 * (void*)(intptr_t)result, which glibc's thrd_join converts back, and thrd_exit(res) is pthread_exit((void*)res). */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <threads.h>

struct sluice_c11_start {
  thrd_start_t func;
  void* arg;
};

static void* sluice_c11_trampoline(void* p) {
  struct sluice_c11_start start = *(struct sluice_c11_start*)p;
  free(p);
  return (void*)(intptr_t)start.func(start.arg);
}

/* The test program's own defaults (TSAN_OPTIONS still overrides them). Its reports are written as usual but do not
 * turn its exit status into 66: with librdkafka's synchronization invisible, TSan reports the hand-over of every
 * message and delivery report from librdkafka's threads to the test's (to_record, consume_all, ...) as races. The
 * broker the test starts inherits TSAN_OPTIONS but not these defaults: a report in the broker still fails the
 * test (exit 66). */
const char* __tsan_default_options(void) { return "exitcode=0"; }

const char* __tsan_default_suppressions(void) {
  return "race:librdkafka.so.1\n"
         "race:format_endpoint_info\n";
}

int thrd_create(thrd_t* thr, thrd_start_t func, void* arg) {
  struct sluice_c11_start* start = malloc(sizeof *start);
  if (start == NULL) return thrd_nomem;
  start->func = func;
  start->arg = arg;
  const int rc = pthread_create((pthread_t*)thr, NULL, sluice_c11_trampoline, start);
  if (rc != 0) {
    free(start);
    return rc == ENOMEM || rc == EAGAIN ? thrd_nomem : thrd_error;
  }
  return thrd_success;
}

/* glibc's thrd_join and thrd_detach, like its thrd_create, bypass the pthread interceptors: TSan would report every
 * librdkafka thread as leaked. */
int thrd_join(thrd_t thr, int* res) {
  void* value = NULL;
  if (pthread_join((pthread_t)thr, &value) != 0) return thrd_error;
  if (res != NULL) *res = (int)(intptr_t)value;
  return thrd_success;
}

int thrd_detach(thrd_t thr) { return pthread_detach((pthread_t)thr) == 0 ? thrd_success : thrd_error; }
