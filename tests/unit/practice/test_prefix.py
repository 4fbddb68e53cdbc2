from harness.practice.prefix import BlockPool, SeatCache, common_prefix


def test_common_prefix():
    assert common_prefix([1, 2, 3], [1, 2, 4]) == 2
    assert common_prefix([], [1]) == 0


def test_seat_with_longest_prefix_wins_else_least_recently_used():
    cache = SeatCache(3)
    s0, c0 = cache.acquire([1, 2, 3, 4])
    cache.release(s0)
    s1, c1 = cache.acquire([9, 9, 9])
    cache.release(s1)
    seat, cached = cache.acquire([1, 2, 3, 7, 8])
    assert (seat, cached) == (s0, 3)
    other, cached2 = cache.acquire([5, 5])
    assert other not in (s0, s1) and cached2 == 0  # the never-used seat is the least recently used


def test_busy_seats_are_not_shared_and_whole_prompt_hit_keeps_one_token():
    cache = SeatCache(1)
    seat, _ = cache.acquire([1, 2, 3])
    assert cache.free_count() == 0
    cache.release(seat)
    assert cache.acquire([1, 2, 3]) == (seat, 2)


def test_no_reuse_mode():
    cache = SeatCache(1, reuse=False)
    s, _ = cache.acquire([1, 2, 3])
    cache.release(s)
    assert cache.acquire([1, 2, 3])[1] == 0


def test_block_pool_reuses_whole_blocks_after_the_same_prefix_only():
    pool = BlockPool(capacity_blocks=100, block_size=4)
    first = list(range(10))
    assert pool.lookup(first) == 0
    pool.insert(first)  # two full blocks cached
    assert pool.lookup(list(range(8)) + [50, 51, 52]) == 8
    assert pool.lookup([99] + list(range(1, 10))) == 0  # same later tokens, different start: no hit
    assert pool.lookup(list(range(8))) == 4  # a fully cached prompt gives back its last block
    assert pool.hits == 12 and pool.queries == 10 + 11 + 10 + 8


def test_block_pool_evicts_least_recently_used():
    pool = BlockPool(capacity_blocks=2, block_size=2)
    pool.insert([1, 2, 3, 4])
    pool.insert([7, 8])
    assert len(pool) == 2
    assert pool.lookup([1, 2, 3, 4, 5]) == 0  # its first block was evicted
    assert pool.lookup([7, 8, 9]) == 2


def test_a_seat_keeps_the_answer_so_the_next_turn_reuses_the_whole_history():
    from harness.practice.prefix import SeatCache

    cache = SeatCache(2)
    prompt, answer = list(range(100)), [500 + i for i in range(20)]
    seat, cached = cache.acquire(prompt)
    assert cached == 0
    cache.release(seat, prompt + answer)  # the prompt and the answer, as llama-server's slot keeps them
    next_turn = prompt + answer + [900 + i for i in range(30)]
    again, cached = cache.acquire(next_turn)
    assert again == seat and cached == 120  # all of the history, none of the new message
    cache.release(again)  # nothing said: it keeps what acquire gave it (the prompt)
    assert cache.seats[again].tokens == next_turn
    off = SeatCache(1, reuse=False)
    s, _ = off.acquire(prompt)
    off.release(s, prompt + answer)
    assert off.acquire(prompt + answer)[1] == 0  # no cache: nothing reused
