/* Thread sanitizer builds only (SLUICE_SANITIZE=thread; tests/integration/CMakeLists.txt, target sluice_rdkafka).
 *
 * librdkafka starts its threads with C11 thrd_create. glibc implements it without going through pthread_create,
 * and the TSan runtimes of Debian 12 (GCC 12's libtsan, clang 14's) intercept only pthread_create: a thread started
 * by thrd_create has no TSan state and crashes on its first intercepted call (librdkafka's broker threads, in
 * getaddrinfo). This definition, linked into each test program that loads librdkafka, takes the place of glibc's
 * for librdkafka and starts the thread with pthread_create, so TSan sees it.
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
