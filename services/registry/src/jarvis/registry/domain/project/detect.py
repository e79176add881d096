"""Tables that turn dependencies and file names into frameworks, test frameworks and package managers."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import PurePosixPath

from jarvis.registry.domain.project.manifests import COMPOSE_FILES, is_manifest, is_requirements_file
from jarvis.registry.domain.project.models import Dependency

FRAMEWORK_BY_DEPENDENCY = {
    # Python
    "django": "django",
    "flask": "flask",
    "fastapi": "fastapi",
    "starlette": "starlette",
    "aiohttp": "aiohttp",
    "tornado": "tornado",
    "sanic": "sanic",
    "litestar": "litestar",
    "pyramid": "pyramid",
    "streamlit": "streamlit",
    "gradio": "gradio",
    "celery": "celery",
    "sqlalchemy": "sqlalchemy",
    "pydantic": "pydantic",
    "langchain": "langchain",
    # Node
    "react": "react",
    "next": "next",
    "vue": "vue",
    "nuxt": "nuxt",
    "svelte": "svelte",
    "@sveltejs/kit": "sveltekit",
    "@angular/core": "angular",
    "solid-js": "solid",
    "astro": "astro",
    "@remix-run/react": "remix",
    "gatsby": "gatsby",
    "electron": "electron",
    "express": "express",
    "fastify": "fastify",
    "koa": "koa",
    "hono": "hono",
    "@nestjs/core": "nestjs",
    "vite": "vite",
    "webpack": "webpack",
    "prisma": "prisma",
    # Go
    "github.com/gin-gonic/gin": "gin",
    "github.com/labstack/echo": "echo",
    "github.com/gofiber/fiber": "fiber",
    "github.com/go-chi/chi": "chi",
    "github.com/gorilla/mux": "gorilla-mux",
    "google.golang.org/grpc": "grpc",
    "github.com/spf13/cobra": "cobra",
    "gorm.io/gorm": "gorm",
    # Rust
    "actix-web": "actix-web",
    "axum": "axum",
    "rocket": "rocket",
    "warp": "warp",
    "tokio": "tokio",
    "tauri": "tauri",
    "clap": "clap",
    "diesel": "diesel",
    "sqlx": "sqlx",
    # JVM, Ruby, PHP
    "quarkus-core": "quarkus",
    "micronaut-runtime": "micronaut",
    "rails": "rails",
    "sinatra": "sinatra",
    "laravel/framework": "laravel",
}
# Families named by a prefix: spring-boot-starter-web, @nestjs/common, symfony/console …
FRAMEWORK_BY_PREFIX = {"spring-boot": "spring-boot", "symfony/": "symfony"}

TEST_FRAMEWORK_BY_DEPENDENCY = {
    "pytest": "pytest",
    "hypothesis": "hypothesis",
    "behave": "behave",
    "nose2": "nose2",
    "jest": "jest",
    "vitest": "vitest",
    "mocha": "mocha",
    "ava": "ava",
    "jasmine": "jasmine",
    "@playwright/test": "playwright",
    "playwright": "playwright",
    "cypress": "cypress",
    "github.com/stretchr/testify": "testify",
    "github.com/onsi/ginkgo": "ginkgo",
    "proptest": "proptest",
    "rspec": "rspec",
    "rspec-rails": "rspec",
    "minitest": "minitest",
    "phpunit/phpunit": "phpunit",
    "pestphp/pest": "pest",
    "junit": "junit",
    "junit-jupiter": "junit",
    "junit-jupiter-api": "junit",
}
TEST_FRAMEWORK_BY_FILE_STEM = {
    "pytest.ini": "pytest",
    "conftest.py": "pytest",
    "jest.config": "jest",
    "vitest.config": "vitest",
    "playwright.config": "playwright",
    "cypress.config": "cypress",
    ".rspec": "rspec",
    "phpunit.xml": "phpunit",
    "go.mod": "go test",
    "Cargo.toml": "cargo test",
}

# (file name, package manager), in the order they are reported.
PACKAGE_MANAGER_BY_FILE = (
    ("uv.lock", "uv"),
    ("poetry.lock", "poetry"),
    ("pdm.lock", "pdm"),
    ("Pipfile", "pipenv"),
    ("pnpm-lock.yaml", "pnpm"),
    ("yarn.lock", "yarn"),
    ("package-lock.json", "npm"),
    ("bun.lockb", "bun"),
    ("bun.lock", "bun"),
    ("go.mod", "go modules"),
    ("Cargo.toml", "cargo"),
    ("pom.xml", "maven"),
    ("build.gradle", "gradle"),
    ("build.gradle.kts", "gradle"),
    ("Gemfile", "bundler"),
    ("composer.json", "composer"),
)
_PYTHON_LOCK_MANAGERS = {"uv", "poetry", "pdm", "pipenv"}
_NODE_LOCK_MANAGERS = {"pnpm", "yarn", "npm", "bun"}


def _stem(name: str) -> str:
    # jest.config.ts and jest.config.mjs both configure jest; phpunit.xml.dist is phpunit.xml.
    for stem in TEST_FRAMEWORK_BY_FILE_STEM:
        if name == stem or name.startswith(stem + "."):
            return stem
    return name


def _is_dockerfile(name: str) -> bool:
    return name == "Dockerfile" or name.startswith("Dockerfile.")


def is_interesting(name: str) -> bool:
    """File names the walk collects: manifests, lockfiles and test-runner configs."""
    return (
        is_manifest(name)
        or _stem(name) in TEST_FRAMEWORK_BY_FILE_STEM
        or any(name == file for file, _ in PACKAGE_MANAGER_BY_FILE)
        or name == "setup.py"
        or _is_dockerfile(name)
    )


def _unique(items: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(items))


def framework_of(dependency: str) -> str | None:
    if dependency in FRAMEWORK_BY_DEPENDENCY:
        return FRAMEWORK_BY_DEPENDENCY[dependency]
    return next((fw for prefix, fw in FRAMEWORK_BY_PREFIX.items() if dependency.startswith(prefix)), None)


def frameworks(dependencies: Iterable[Dependency], found: Iterable[str]) -> list[str]:
    names = [fw for dep in dependencies if (fw := framework_of(dep.name))]
    basenames = {PurePosixPath(path).name for path in found}
    if any(_is_dockerfile(name) for name in basenames) or basenames & COMPOSE_FILES:
        names.append("docker")
    return _unique(names)


def test_frameworks(dependencies: Iterable[Dependency], found: Iterable[str]) -> list[str]:
    names = [TEST_FRAMEWORK_BY_DEPENDENCY[dep.name] for dep in dependencies if dep.name in TEST_FRAMEWORK_BY_DEPENDENCY]
    # pytest-cov, pytest-asyncio … imply pytest even when pytest itself comes transitively.
    names += ["pytest" for dep in dependencies if dep.name.startswith("pytest-")]
    names += [
        TEST_FRAMEWORK_BY_FILE_STEM[stem]
        for path in found
        if (stem := _stem(PurePosixPath(path).name)) in TEST_FRAMEWORK_BY_FILE_STEM
    ]
    return _unique(names)


def package_managers(found: Iterable[str]) -> list[str]:
    basenames = {PurePosixPath(path).name for path in found}
    names = [manager for file, manager in PACKAGE_MANAGER_BY_FILE if file in basenames]
    python_manifest = bool({"pyproject.toml", "setup.py"} & basenames)
    if any(is_requirements_file(n) for n in basenames) or (python_manifest and not _PYTHON_LOCK_MANAGERS & set(names)):
        names.append("pip")
    if "package.json" in basenames and not _NODE_LOCK_MANAGERS & set(names):
        names.append("npm")  # no lockfile yet: npm is what `npm install` would create one with
    return _unique(names)
