-- Sign-in limits held by the whole deployment, not by each process: N
-- processes behind a load balancer must not give a password guesser N
-- times the tries.
--
-- One row per rate (an address across accounts, or an account from
-- browsers it never signed in on): the time its next attempt is free,
-- evenly spaced with a burst (a generic cell rate). A row whose time has
-- passed says nothing and is pruned.
CREATE TABLE sign_in_turns (
    turn_key TEXT PRIMARY KEY,
    next_free BIGINT NOT NULL
);

-- Wrong passwords in a row for one account from one address: from the
-- fourth, each doubles that pair's wait. A right password deletes the row;
-- a pair quiet for the longest wait is pruned.
CREATE TABLE sign_in_failures (
    email_key TEXT NOT NULL,
    address TEXT NOT NULL,
    failures BIGINT NOT NULL,
    not_before BIGINT NOT NULL,
    last_at BIGINT NOT NULL,
    PRIMARY KEY (email_key, address)
);
