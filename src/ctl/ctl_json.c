/* kdelayctl's --json output (ctl_json.h). */
#include "ctl_json.h"

#include <stdio.h>

int kd_ctl_json_print(cJSON *o)
{
        char *text = o ? cJSON_PrintUnformatted(o) : NULL;
        int rc = text && printf("%s\n", text) > 0 ? 0 : -1;
        cJSON_free(text);
        cJSON_Delete(o);
        return rc;
}
