/* SPDX-License-Identifier: Apache-2.0 */
/* kdelayctl verbs. Each takes the verb's own argv (argv[0] = verb name) and
 * returns the process exit code. */
#ifndef KD_CTL_H
#define KD_CTL_H

int kd_ctl_topics(int argc, char **argv);
int kd_ctl_db(int argc, char **argv);
int kd_ctl_schedule(int argc, char **argv);
int kd_ctl_cancel(int argc, char **argv);
int kd_ctl_status(int argc, char **argv);
int kd_ctl_tiers(int argc, char **argv);
int kd_ctl_stats(int argc, char **argv);
int kd_ctl_tasks(int argc, char **argv);
int kd_ctl_reschedule(int argc, char **argv);
int kd_ctl_audit(int argc, char **argv);
int kd_ctl_dead(int argc, char **argv);

#endif
