-- Seed data; the semicolon inside the string must not split the statement.
CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT NOT NULL, note TEXT);
CREATE INDEX users_name ON users (name);
INSERT INTO users (name, note) VALUES ('alice', 'likes; semicolons'), ('bob', NULL);
