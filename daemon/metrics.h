/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/* The Prometheus textfile (metrics.c). */

typedef struct Manager Manager;

/* Writes the metrics to MetricsFile=, else to the node exporter's textfile directory when
 * it exists; 0 when there is nowhere to write. Atomic: temp + rename. */
int manager_write_metrics(Manager *m);
/* The textfile's path now, or NULL. */
const char *manager_metrics_path(Manager *m);
