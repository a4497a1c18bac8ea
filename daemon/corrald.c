/* SPDX-License-Identifier: GPL-2.0-or-later */
/* corrald: the Corral scheduler daemon. */

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include "log.h"
#include "manager.h"

/* Room for a configuration error's file:line and message before the counts. */
#define STATUS_MAX 1024

static const char *arg_socket;
static const char *arg_state_dir = CORRAL_STATEDIR;
static const char *arg_run_dir = CORRAL_RUNDIR;
static const char *arg_config_dir = CORRAL_CONFDIR;

static void help(void) {
        printf("corrald [OPTIONS...]\n\n"
               "The Corral batch job scheduler daemon.\n\n"
               "  -h --help              Show this help\n"
               "     --version           Show the version\n"
               "     --socket=PATH       Listen on PATH instead of the socket systemd passes\n"
               "                         (default without socket activation: %s)\n"
               "     --state-dir=DIR     State database directory (default: %s)\n"
               "     --run-dir=DIR       Runtime directory (default: %s)\n"
               "     --config-dir=DIR    Configuration directory (default: %s)\n"
               "     --log-level=LEVEL   debug, info, notice, warning, err\n",
               CORRAL_SOCKET_PATH, CORRAL_STATEDIR, CORRAL_RUNDIR, CORRAL_CONFDIR);
}

static int parse_argv(int argc, char *argv[]) {
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                { "version", no_argument, NULL, 'V' },
                { "socket", required_argument, NULL, 's' },
                { "state-dir", required_argument, NULL, 'S' },
                { "run-dir", required_argument, NULL, 'R' },
                { "config-dir", required_argument, NULL, 'C' },
                { "log-level", required_argument, NULL, 'l' },
                {}
        };
        int c, l;

        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0)
                switch (c) {
                case 'h': help(); return 0;
                case 'V': printf("corrald %s\n", PACKAGE_VERSION); return 0;
                case 's': arg_socket = optarg; break;
                case 'S': arg_state_dir = optarg; break;
                case 'R': arg_run_dir = optarg; break;
                case 'C': arg_config_dir = optarg; break;
                case 'l':
                        l = log_level_from_string(optarg);
                        if (l < 0)
                                return log_error_errno(l, "Unknown log level: %s", optarg);
                        log_set_max_level(l);
                        break;
                default: return -EINVAL;
                }
        if (optind < argc)
                return log_error_errno(EINVAL, "corrald takes no arguments.");
        return 1;
}

static int on_sigterm(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata) {
        (void) sd_notify(false, "STOPPING=1\nSTATUS=Shutting down (running jobs keep running).");
        return sd_event_exit(sd_event_source_get_event(s), 0);
}

static int on_sighup(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata) {
        Manager *m = userdata;
        _cleanup_free_ char *error = NULL, *in_force = NULL;
        char status[STATUS_MAX];
        int r;

        (void) sd_notify(false, "RELOADING=1\nSTATUS=Reloading configuration.");
        r = manager_reload(m, &error);
        if (r < 0) {
                (void) manager_config_in_force(m, &in_force);
                log_error_errno(r, "Configuration not reloaded: %s. Keeping %s.", error ?: strerror(-r),
                                strna(in_force));
        } else
                log_info("Configuration reloaded.");
        manager_status(m, status, sizeof status);
        (void) sd_notifyf(false, "READY=1\nSTATUS=%s", status);
        return 0;
}

static int on_status(sd_event_source *s, uint64_t usec, void *userdata) {
        char buf[STATUS_MAX];
        manager_status(userdata, buf, sizeof buf);
        (void) sd_notifyf(false, "STATUS=%s", buf);
        return sd_event_source_set_time_relative(s, 10 * UINT64_C(1000000));
}

int main(int argc, char *argv[]) {
        _cleanup_(sd_event_unrefp) sd_event *event = NULL;
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(manager_freep) Manager *m = NULL;
        sigset_t mask;
        char status[STATUS_MAX];
        int r;

        log_setup("corrald", LOG_TARGET_AUTO);
        if (log_parse_environment() < 0)
                log_warning("Ignoring unknown $CORRAL_LOG_LEVEL.");
        r = parse_argv(argc, argv);
        if (r <= 0)
                return r < 0 ? 2 : 0;
        /* No umask(): corrald.service's UMask= decides the mode of what corrald creates (its
         * store, its metrics file); jobs get their submitter's own umask. */

        sigemptyset(&mask);
        sigaddset(&mask, SIGCHLD);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGINT);
        sigaddset(&mask, SIGHUP);
        (void) sigprocmask(SIG_BLOCK, &mask, NULL);
        (void) signal(SIGPIPE, SIG_IGN);

        r = sd_event_default(&event);
        if (r < 0)
                return log_error_errno(r, "Cannot create the event loop: %m"), 1;
        (void) sd_event_set_watchdog(event, true);
        r = sd_bus_open_system(&bus);
        if (r < 0)
                return log_error_errno(r, "Cannot connect to the system bus: %m"), 1;
        r = sd_bus_attach_event(bus, event, 0);
        if (r < 0)
                return log_error_errno(r, "Cannot attach the bus: %m"), 1;

        (void) sd_notify(false, "STATUS=Loading state.");
        r = manager_new(event, bus, arg_config_dir, arg_state_dir, arg_run_dir, &m);
        if (r < 0)
                return 1; /* logged */
        r = manager_startup(m);
        if (r < 0)
                return 1;
        r = manager_listen(m, arg_socket);
        if (r < 0)
                return log_error_errno(r, "Cannot listen on %s: %m", arg_socket ?: "the activated socket"), 1;

        if ((r = sd_event_add_signal(event, NULL, SIGTERM, on_sigterm, m)) < 0 ||
            (r = sd_event_add_signal(event, NULL, SIGINT, on_sigterm, m)) < 0 ||
            (r = sd_event_add_signal(event, NULL, SIGHUP, on_sighup, m)) < 0 ||
            (r = sd_event_add_time_relative(event, NULL, CLOCK_MONOTONIC, 0, 0, on_status, m)) < 0)
                return log_error_errno(r, "Cannot set up event sources: %m"), 1;

        manager_status(m, status, sizeof status);
        (void) sd_notifyf(false, "READY=1\nSTATUS=%s", status);
        log_info("corrald %s ready.", PACKAGE_VERSION);
        r = sd_event_loop(event);
        m = manager_free(m);
        if (r < 0)
                return log_error_errno(r, "Event loop failed: %m"), 1;
        return r;
}
