/* server_limits.c: who may ask (the API key) and how many at once (slots
 * and the bounded queue in front of them). */
#include "runtime/serve/server_internal.h"

#include <string.h>
#include <strings.h>

/* Compares the whole length whatever the input, so the time taken does not
 * tell an attacker how many leading bytes were right. */
static bool same_secret(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    unsigned char d = (unsigned char)(la != lb);
    for (size_t i = 0; i < la; i++) d |= (unsigned char)(a[i] ^ b[i % (lb ? lb : 1)]);
    return d == 0;
}

bool server_authorized(const server *s, struct MHD_Connection *c)
{
    if (!s->api_key) return true;
    const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
    if (h && !strncasecmp(h, "Bearer ", 7) && same_secret(h + 7, s->api_key)) return true;
    h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "x-api-key");
    return h && same_secret(h, s->api_key);
}

int server_slot_acquire(server *s)
{
    pthread_mutex_lock(&s->mu);
    if (s->busy >= s->parallel && s->waiting >= s->queue) {
        pthread_mutex_unlock(&s->mu);
        return -1;
    }
    s->waiting++;
    while (s->busy >= s->parallel && !atomic_load(&s->stopping)) pthread_cond_wait(&s->cv, &s->mu);
    s->waiting--;
    int rc = atomic_load(&s->stopping) ? -2 : 0;
    if (rc == 0) s->busy++;
    pthread_mutex_unlock(&s->mu);
    return rc;
}

void server_slot_release(server *s)
{
    pthread_mutex_lock(&s->mu);
    s->busy--;
    pthread_cond_signal(&s->cv);
    pthread_mutex_unlock(&s->mu);
}
