/*
 * qp_sport.c - the flow-label arithmetic of RoCEv2 source ports, and the
 * rdma-core calls that apply a port to a QP (see qp_sport.h).
 */
#include "qp_sport.h"

#include <errno.h>

#if C4_HAVE_RDMA
#include <infiniband/mlx5dv.h>
#endif

#define QP_FL_LOW_MASK	 0x03FFFu
#define QP_FL_HIGH_MASK	 0xFC000u
#define QP_FL_HIGH_SHIFT 14

uint16_t
qp_sport_from_flow_label(uint32_t fl)
{
	uint32_t low = fl & QP_FL_LOW_MASK;
	uint32_t high = (fl & QP_FL_HIGH_MASK) >> QP_FL_HIGH_SHIFT;

	return (uint16_t)((low ^ high) | QP_SPORT_MIN);
}

int
qp_sport_flow_label(uint16_t sport, uint32_t *fl)
{
	if (sport < QP_SPORT_MIN)
		return -1;
	/* high bits 0: low ^ 0 = low, the port's 14 low bits */
	*fl = (uint32_t)sport & QP_FL_LOW_MASK;
	return 0;
}

#if C4_HAVE_RDMA
int
qp_sport_set_attr(struct ibv_qp_attr *attr, uint16_t sport)
{
	uint32_t fl;

	if (qp_sport_flow_label(sport, &fl) < 0) {
		errno = EINVAL;
		return -1;
	}
	attr->ah_attr.is_global = 1;
	attr->ah_attr.grh.flow_label = fl;
	return 0;
}

int
qp_sport_apply(struct ibv_qp *qp, uint16_t sport)
{
	int rc;

	if (sport < QP_SPORT_MIN) {
		errno = EINVAL;
		return -1;
	}
	rc = mlx5dv_modify_qp_udp_sport(qp, sport);
	if (rc != 0) {
		errno = rc > 0 ? rc : EOPNOTSUPP;
		return -1;
	}
	return 0;
}
#endif
