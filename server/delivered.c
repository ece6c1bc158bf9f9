/* delivered.c - see delivered.h. linux/tcp.h has tcpi_bytes_acked, which
 * glibc's netinet/tcp.h lacks. */
#include "delivered.h"

#include <linux/sockios.h>
#include <linux/tcp.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

unsigned long long srv_tcp_acked(int fd) {
    struct tcp_info ti = {0};
    socklen_t len = sizeof ti;
    if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) != 0 ||
        len < offsetof(struct tcp_info, tcpi_bytes_acked) + sizeof ti.tcpi_bytes_acked)
        return 0;
    return ti.tcpi_bytes_acked;
}

unsigned long long srv_tcp_written(int fd) {
    int queued = 0;
    if (ioctl(fd, SIOCOUTQ, &queued) != 0 || queued < 0) queued = 0;
    return srv_tcp_acked(fd) + (unsigned long long)queued;
}

size_t srv_delivered(unsigned long long acked, unsigned long long written_before, size_t head,
                     size_t body) {
    if (acked <= written_before + head) return 0;
    unsigned long long got = acked - written_before - head;
    return got < body ? (size_t)got : body;
}
