/* kdelayctl's --json output: one JSON object per line on stdout. */
#ifndef KD_CTL_JSON_H
#define KD_CTL_JSON_H

#include <cjson/cJSON.h>

/* Prints o unformatted on one line of stdout and deletes it (o may be
 * NULL: out of memory, nothing printed). 0, or -1 when nothing could be
 * printed. */
int kd_ctl_json_print(cJSON *o);

#endif
