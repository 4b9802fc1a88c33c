// ccl.cpp - the C++ side of libc4client: a rank-owning object that
// reports one interval of measured collectives to the node's c4a-agent.
// Built from the installed library only:
//
//	c++ -std=c++17 ccl.cpp $(pkg-config --cflags --libs c4client) -o ccl++
//	./ccl++ [SOCKET [JOB [TOKEN]]]
//
// The exit status is 0 when the summary was sent, 1 otherwise.
#include <c4client.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace {

struct SketchDeleter {
	void operator()(c4_sketch *s) const { c4_sketch_free(s); }
};
using Sketch = std::unique_ptr<c4_sketch, SketchDeleter>;

class Reporter {
      public:
	Reporter(const std::string &socket, const std::string &job,
		 const char *token)
	{
		c4client_opts o{};
		o.socket_path = socket.c_str();
		o.job_id = job.c_str();
		o.token = token;
		client_ = c4client_open(&o);
		if (client_ == nullptr)
			throw std::runtime_error("c4client_open failed");
	}
	~Reporter() { c4client_close(client_); }
	Reporter(const Reporter &) = delete;
	Reporter &operator=(const Reporter &) = delete;

	void add_comm(uint64_t hash, uint32_t nranks,
		      const std::vector<uint32_t> &mine)
	{
		std::vector<c4client_rank> ranks(mine.size());
		for (size_t i = 0; i < mine.size(); i++) {
			ranks[i].rank = mine[i];
			ranks[i].local_rank = static_cast<uint32_t>(i);
			ranks[i].gpu = static_cast<uint32_t>(i);
		}
		c4client_comm c{};
		c.comm_hash = hash;
		c.nranks = nranks;
		c.name = "tp";
		c.nlocal = ranks.size();
		c.ranks = ranks.data();
		if (c4client_register(client_, &c) < 0)
			throw std::runtime_error("c4client_register failed");
	}

	bool report(uint64_t hash, uint32_t rank, const c4_sketch *kernel)
	{
		c4client_op op{};
		op.func = C4CLIENT_ALLGATHER;
		op.count = c4_sketch_count(kernel);
		op.bytes = op.count << 16;
		op.kernel_time = kernel;
		c4client_coll coll{};
		coll.comm_hash = hash;
		coll.rank = rank;
		coll.nops = 1;
		coll.ops = &op;
		coll.last_seq_entered = coll.last_seq_completed = op.count;
		struct c4client_report r{};
		r.interval_ms = 1000;
		r.ncolls = 1;
		r.colls = &coll;
		return c4client_report(client_, &r) == 0;
	}

	struct c4client_stats stats()
	{
		struct c4client_stats st{};
		c4client_stats(client_, &st);
		return st;
	}

      private:
	struct c4client *client_ = nullptr;
};

} // namespace

int
main(int argc, char **argv)
{
	std::string socket = argc > 1 ? argv[1] : "/run/c4/agent.sock";
	const char *job = argc > 2 ? argv[2] : std::getenv("C4_JOB_ID");
	const char *token = argc > 3 ? argv[3] : std::getenv("C4_TOKEN");
	static_assert(C4CLIENT_VERSION >= 100, "libc4client 0.1 or later");

	if (job == nullptr) {
		std::fprintf(stderr, "ccl++: no job id\n");
		return 1;
	}
	try {
		Reporter rep(socket, job, token);
		const uint64_t hash = 0xc4c4c4c4c4c4c402ull;
		rep.add_comm(hash, 16, {2, 3});
		Sketch kernel(c4_sketch_new(0));
		for (uint64_t i = 1; i <= 50; i++)
			c4_sketch_add(kernel.get(), 250000 + i * 500);
		rep.report(hash, 2, kernel.get());
		bool sent = false;
		for (int i = 0; i < 200 && !sent; i++) {
			sent = rep.stats().reports_sent >= 1;
			if (!sent)
				std::this_thread::sleep_for(
					std::chrono::milliseconds(50));
		}
		std::printf("ccl++: p99 %.0f ns, sent %d\n",
			    c4_sketch_quantile(kernel.get(), 0.99), sent);
		return sent ? 0 : 1;
	} catch (const std::exception &e) {
		std::fprintf(stderr, "ccl++: %s\n", e.what());
		return 1;
	}
}
