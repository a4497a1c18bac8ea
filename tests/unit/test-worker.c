/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The worker pool (daemon/worker.c): work runs off the loop, at most n threads at once,
 * results come back on the loop in the order the work finished, and freeing the pool
 * waits for what runs and cancels what waits. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

#include "daemon/worker.h"

typedef struct Shared {
        atomic_int running, max_running;
        pthread_barrier_t *barrier; /* NULL: none */
        pthread_t loop_thread;
        int n_done;
        int order[16];
        int results[16];
        sd_event *event;
        int stop_after;
} Shared;

typedef struct Item {
        Shared *sh;
        int id;
        useconds_t sleep_us;
} Item;

static int run(void *data) {
        Item *it = data;
        int now = atomic_fetch_add(&it->sh->running, 1) + 1, max;

        assert_false(pthread_equal(pthread_self(), it->sh->loop_thread));
        while ((max = atomic_load(&it->sh->max_running)) < now &&
               !atomic_compare_exchange_weak(&it->sh->max_running, &max, now))
                ;
        if (it->sh->barrier)
                pthread_barrier_wait(it->sh->barrier);
        usleep(it->sleep_us);
        atomic_fetch_sub(&it->sh->running, 1);
        return it->id * 10;
}

static void done(void *data, int r) {
        Item *it = data;
        Shared *sh = it->sh;

        assert_true(pthread_equal(pthread_self(), sh->loop_thread));
        sh->order[sh->n_done] = it->id;
        sh->results[sh->n_done] = r;
        sh->n_done++;
        if (sh->n_done == sh->stop_after)
                sd_event_exit(sh->event, 0);
        free(it);
}

static void submit(WorkerPool *p, Shared *sh, int id, useconds_t sleep_us) {
        Item *it = malloc(sizeof *it);

        assert_non_null(it);
        *it = (Item) { .sh = sh, .id = id, .sleep_us = sleep_us };
        assert_int_equal(worker_pool_submit(p, run, done, it), 0);
}

static void test_one_thread_in_order(void **state) {
        sd_event *e = NULL;
        WorkerPool *p = NULL;
        Shared sh = { .loop_thread = pthread_self(), .stop_after = 5 };

        assert_int_equal(sd_event_new(&e), 0);
        sh.event = e;
        assert_int_equal(worker_pool_new(e, 1, &p), 0);
        for (int i = 1; i <= 5; i++)
                submit(p, &sh, i, 1000);
        assert_int_equal(worker_pool_pending(p), 5);
        assert_int_equal(sd_event_loop(e), 0);
        assert_int_equal(sh.n_done, 5);
        for (int i = 0; i < 5; i++) {
                assert_int_equal(sh.order[i], i + 1);
                assert_int_equal(sh.results[i], (i + 1) * 10);
        }
        assert_int_equal(atomic_load(&sh.max_running), 1);
        assert_int_equal(worker_pool_pending(p), 0);
        worker_pool_free(p);
        sd_event_unref(e);
}

/* Two threads run two items at once (the barrier would hold one thread forever), never
 * three. */
static void test_bounded_concurrency(void **state) {
        sd_event *e = NULL;
        WorkerPool *p = NULL;
        pthread_barrier_t b;
        Shared sh = { .loop_thread = pthread_self(), .stop_after = 6, .barrier = &b };

        assert_int_equal(pthread_barrier_init(&b, NULL, 2), 0);
        assert_int_equal(sd_event_new(&e), 0);
        sh.event = e;
        assert_int_equal(worker_pool_new(e, 2, &p), 0);
        for (int i = 1; i <= 6; i++)
                submit(p, &sh, i, 2000);
        assert_int_equal(sd_event_loop(e), 0);
        assert_int_equal(sh.n_done, 6);
        assert_int_equal(atomic_load(&sh.max_running), 2);
        worker_pool_free(p);
        pthread_barrier_destroy(&b);
        sd_event_unref(e);
}

/* Freed with one item running and three waiting: the running one completes with its
 * result, the others are cancelled without running; every done() is called once. */
static void test_free_cancels_waiting(void **state) {
        sd_event *e = NULL;
        WorkerPool *p = NULL;
        Shared sh = { .loop_thread = pthread_self() };

        assert_int_equal(sd_event_new(&e), 0);
        sh.event = e;
        assert_int_equal(worker_pool_new(e, 1, &p), 0);
        for (int i = 1; i <= 4; i++)
                submit(p, &sh, i, 200000);
        while (atomic_load(&sh.running) == 0)
                usleep(1000);
        worker_pool_free(p);
        assert_int_equal(sh.n_done, 4);
        assert_int_equal(sh.order[0], 1);
        assert_int_equal(sh.results[0], 10);
        for (int i = 1; i < 4; i++) {
                assert_int_equal(sh.order[i], i + 1);
                assert_int_equal(sh.results[i], -ECANCELED);
        }
        sd_event_unref(e);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_one_thread_in_order),
                cmocka_unit_test(test_bounded_concurrency),
                cmocka_unit_test(test_free_cancels_waiting),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
