/* SPDX-License-Identifier: GPL-2.0-or-later */
/* corral config check [DIR]: the whole configuration (corral.conf, its drop-ins, the
 * project files) checked as corrald would load it, without applying it: an admin runs it
 * before systemctl reload corrald. It reads the files with the caller's rights, prints the
 * queues in effect, and warns about each built-in queue the files changed or removed. */

#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "config/config.h"
#include "log.h"
#include "strv.h"

static void config_help(void) {
        printf("Usage: corral config check [DIR]\n\n"
               "Check corrald's configuration in DIR (default " CORRAL_CONFDIR "): corral.conf,\n"
               "corral.conf.d/*.conf and projects.d/*.conf, as a reload would read them, without\n"
               "applying anything. Prints file:line and what is wrong, or what was found and\n"
               "the queues in effect, with a warning for each built-in queue changed or removed.\n");
}

static void print_names(const char *label, char *const *l) {
        if (!l || !l[0])
                return;
        printf(" %s=", label);
        STRV_FOREACH(s, l)
                printf("%s%s", s == l ? "" : ",", *s);
}

/* One line per queue, what decides who gets the machine first: priority, what it may
 * suspend, what it costs, who may use it. */
static void print_queues(const Config *c) {
        printf("Queues in effect:\n");
        for (size_t i = 0; i < c->n_queues; i++) {
                const QueueConfig *q = &c->queues[i];

                printf("  %-12s Priority=%d ChargeFactor=%g", q->name, q->priority, q->charge_factor);
                print_names("Preempts", q->preempts);
                print_names("AllowGroups", q->allow_groups);
                print_names("AllowProjects", q->allow_projects);
                if (!q->allow_groups && !q->allow_projects)
                        printf(" (open to everyone)");
                if (q->builtin)
                        printf(" [built-in%s]", q->overridden ? ", overridden" : "");
                /* Where its jobs run: a forwarding queue names the cluster's partition and the
                 * client corrald would run (corrald(8), FORWARDING TO SLURM). */
                printf(" Backend=%s", queue_backend_to_string(q->backend));
                if (q->backend == QUEUE_BACKEND_SLURM) {
                        printf(" SlurmPartition=%s MaxForwarded=%" PRIu32, q->slurm_partition ?: "(default)",
                               q->max_forwarded);
                        print_names("SlurmAccount", q->slurm_account);
                        printf(" client=%s", config_slurm_bin_dir(c, "/"));
                }
                printf("\n");
        }
        fflush(stdout); /* the warnings, on stderr, after the table */
        for (size_t i = 0; i < c->n_queues; i++) {
                const QueueConfig *q = &c->queues[i];
                _cleanup_free_ char *keys = NULL;
                size_t n = 0;

                if (!q->overridden)
                        continue;
                STRV_FOREACH(k, q->overridden)
                        n += strlen(*k) + 2;
                keys = malloc(n + 1);
                if (!keys)
                        continue;
                char *p = keys;
                STRV_FOREACH(k, q->overridden)
                        p = stpcpy(stpcpy(stpcpy(p, k == q->overridden ? "" : " "), *k), "=");
                log_warning("config: the built-in queue %s is overridden: %s", q->name, keys);
        }
        STRV_FOREACH(r, c->removed_builtins)
                log_warning("config: the built-in queue %s is REMOVED (Disabled=yes): nobody can submit to it",
                            *r);
}

/* The [Device] sections, in the order corrald applies them over what it discovers (the
 * result, GPUs included, is corral info's). */
static void print_devices(const Config *c) {
        if (c->n_devices == 0)
                return;
        printf("Device sections (applied over discovery, in this order):\n");
        for (size_t i = 0; i < c->n_devices; i++) {
                const DeviceConfig *d = &c->devices[i];

                printf("  %-12s", d->name ?: d->pci_address);
                if (d->name && d->pci_address)
                        printf(" PCIAddress=%s", d->pci_address);
                if (d->hide)
                        printf(" Hide=yes");
                if (d->vendor)
                        printf(" Vendor=%s", d->vendor);
                if (d->numa_node != CONFIG_NUMA_NODE_UNSET)
                        printf(" NumaNode=%d", d->numa_node);
                if (d->shards != CONFIG_SHARDS_UNSET)
                        printf(" Shards=%d", d->shards);
                print_names("Nodes", d->nodes);
                print_names("Features", d->features);
                if (d->model)
                        printf(" Model=\"%s\"", d->model);
                printf("\n");
        }
}

int verb_config(Cli *cli, int argc, char **argv) {
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                {},
        };
        _cleanup_(config_freep) Config *c = NULL;
        _cleanup_free_ char *error = NULL;
        const char *dir = CORRAL_CONFDIR;
        int o, r;

        cli_reset_getopt();
        while ((o = getopt_long(argc, argv, "h", options, NULL)) >= 0)
                switch (o) {
                case 'h':
                        config_help();
                        return CLI_EXIT_SUCCESS;
                default:
                        log_error("config: see corral config --help");
                        return CLI_EXIT_USAGE;
                }
        if (optind >= argc || !streq(argv[optind], "check")) {
                log_error("config: expected 'check' (corral config check [DIR])");
                return CLI_EXIT_USAGE;
        }
        if (optind + 1 < argc)
                dir = argv[optind + 1];
        if (optind + 2 < argc) {
                log_error("config: unexpected argument '%s'", argv[optind + 2]);
                return CLI_EXIT_USAGE;
        }

        r = config_load(dir, &c, &error);
        if (r == -ENOMEM)
                return cli_oom();
        if (r < 0) {
                log_error("config: %s", error ?: strerror(-r));
                return CLI_EXIT_FAILURE;
        }
        printf("%s: valid: %zu queue%s (default %s), %zu project%s%s\n", dir, c->n_queues, c->n_queues == 1 ? "" : "s",
               c->default_queue, c->n_projects, c->n_projects == 1 ? "" : "s",
               c->n_projects == 0 ? " (every unix group is a project)" : "");
        print_queues(c);
        print_devices(c);
        return CLI_EXIT_SUCCESS;
}
