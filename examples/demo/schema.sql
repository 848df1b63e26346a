-- The demo schema: three tables owned by the non-superuser role the proxy logs in as.
CREATE TABLE orgs (
  id int PRIMARY KEY,
  name text NOT NULL,
  secret text
);

CREATE TABLE users (
  id int PRIMARY KEY,
  name text NOT NULL,
  email text,
  ssn text,
  org_id int REFERENCES orgs
);

CREATE TABLE orders (
  id int PRIMARY KEY,
  user_id int REFERENCES users,
  amount numeric(10,2),
  note text
);
